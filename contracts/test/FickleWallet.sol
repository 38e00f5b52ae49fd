// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TestSmartWallet} from "./TestSmartWallet.sol";

/// @title A smart wallet for the tests whose approval of its owner's signatures is not always
/// the same: what an attacker deploys to make a withdrawal pass every check and fail on chain,
/// or to make an auditor see an approval that has since lapsed.
/// @notice Modes: `ALWAYS` approves its owner's ECDSA signatures (as `TestSmartWallet`);
/// `ONLY_AT_ZERO_GAS_PRICE` only in a call at gas price 0 (a simulation), and then refuses
/// payments at any other gas price too; `UNTIL` only before block time `until`; `NEVER` never.
/// The owner may also make it refuse every payment.
contract FickleWallet is TestSmartWallet {
    uint8 public constant ALWAYS = 0;
    uint8 public constant ONLY_AT_ZERO_GAS_PRICE = 1;
    uint8 public constant UNTIL = 2;
    uint8 public constant NEVER = 3;

    uint8 public mode;
    uint256 public until;
    bool public refusesPayments;

    error PaymentRefused();

    constructor(address owner_, uint8 mode_, uint256 until_) TestSmartWallet(owner_) {
        mode = mode_;
        until = until_;
    }

    receive() external payable override {
        if (refusesPayments || (mode == ONLY_AT_ZERO_GAS_PRICE && tx.gasprice != 0)) revert PaymentRefused();
    }

    /// @notice Changes how it approves (the owner only).
    function setMode(uint8 mode_, uint256 until_) external onlyOwner {
        mode = mode_;
        until = until_;
    }

    /// @notice Makes it refuse (or take again) payments of the native asset (the owner only).
    function setRefusesPayments(bool refuses) external onlyOwner {
        refusesPayments = refuses;
    }

    /// @dev Approves as its mode says.
    function _approvesNow() internal view override returns (bool) {
        return mode == ALWAYS || (mode == ONLY_AT_ZERO_GAS_PRICE && tx.gasprice == 0)
            || (mode == UNTIL && block.timestamp < until);
    }
}
