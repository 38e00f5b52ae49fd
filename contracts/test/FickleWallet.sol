// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @title A smart wallet for the tests whose approval of its owner's signatures is not always
/// the same: what an attacker deploys to make a withdrawal pass every check and fail on chain,
/// or to make an auditor see an approval that has since lapsed.
/// @notice Modes: `ALWAYS` approves its owner's ECDSA signatures (as `TestSmartWallet`);
/// `ONLY_AT_ZERO_GAS_PRICE` only in a call at gas price 0 (a simulation), and then refuses
/// payments at any other gas price too; `UNTIL` only before block time `until`; `NEVER` never.
/// The owner may also make it refuse every payment.
contract FickleWallet is IERC1271 {
    uint8 public constant ALWAYS = 0;
    uint8 public constant ONLY_AT_ZERO_GAS_PRICE = 1;
    uint8 public constant UNTIL = 2;
    uint8 public constant NEVER = 3;

    address public immutable owner;
    uint8 public mode;
    uint256 public until;
    bool public refusesPayments;

    error NotOwner(address caller);
    error PaymentRefused();

    constructor(address owner_, uint8 mode_, uint256 until_) {
        owner = owner_;
        mode = mode_;
        until = until_;
    }

    receive() external payable {
        if (refusesPayments || (mode == ONLY_AT_ZERO_GAS_PRICE && tx.gasprice != 0)) revert PaymentRefused();
    }

    /// @notice Changes how it approves (the owner only).
    function setMode(uint8 mode_, uint256 until_) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        mode = mode_;
        until = until_;
    }

    /// @notice Makes it refuse (or take again) payments of the native asset (the owner only).
    function setRefusesPayments(bool refuses) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        refusesPayments = refuses;
    }

    /// @notice Calls `target` with `value` and `data` on the owner's behalf.
    function execute(address target, uint256 value, bytes calldata data) external returns (bytes memory) {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        (bool success, bytes memory result) = target.call{value: value}(data);
        if (!success) {
            assembly {
                revert(add(result, 32), mload(result))
            }
        }
        return result;
    }

    /// @inheritdoc IERC1271
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError recoverError,) = ECDSA.tryRecoverCalldata(hash, signature);
        bool approves = mode == ALWAYS || (mode == ONLY_AT_ZERO_GAS_PRICE && tx.gasprice == 0)
            || (mode == UNTIL && block.timestamp < until);
        if (approves && recoverError == ECDSA.RecoverError.NoError && signer == owner) {
            return IERC1271.isValidSignature.selector;
        }
        return 0xffffffff;
    }
}
