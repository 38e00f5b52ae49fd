// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {DexdVaultBase} from "./DexdVaultBase.sol";

/// @title The dexd vault: custody of a venue's deposits on one chain.
/// @notice Anyone deposits ERC-20 tokens or the native asset for themselves; the venue credits
/// each `Deposited` event once it has enough confirmations. Withdrawals follow the base's rule
/// (`DexdVaultBase`): the operator can never pay anyone but the account, nor more than it signed.
/// @dev What it does not do: it keeps no balances per account (the venue's ledger does, and
/// `/account/reserves` compares the two), and it has no way for the owner to take funds.
contract DexdVault is DexdVaultBase {
    using SafeERC20 for IERC20;

    constructor(address initialOwner, address initialOperator) DexdVaultBase(initialOwner, initialOperator) {}

    /// @notice Pulls `amount` of `token` from the caller (after its `approve`) and credits the
    /// caller with what the vault actually received, so a token that takes a fee on transfer
    /// cannot credit more than arrived.
    function deposit(address token, uint256 amount) external nonReentrant whenNotPaused {
        if (token == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        IERC20 erc20 = IERC20(token);
        uint256 before = erc20.balanceOf(address(this));
        erc20.safeTransferFrom(msg.sender, address(this), amount);
        uint256 received = erc20.balanceOf(address(this)) - before;
        if (received == 0) revert NothingReceived();
        _recordDeposit(msg.sender, token, received);
    }

    /// @notice Credits the caller with the native asset sent along.
    function depositNative() external payable nonReentrant whenNotPaused {
        if (msg.value == 0) revert ZeroAmount();
        _recordDeposit(msg.sender, address(0), msg.value);
    }

    /// @notice Pays one withdrawal. Only the operator may call it.
    function withdraw(Withdrawal calldata withdrawal) external onlyOperator nonReentrant {
        _withdraw(withdrawal);
    }

    /// @notice Pays many withdrawals in one transaction; if any of them cannot be paid, none is.
    function withdrawBatch(Withdrawal[] calldata withdrawals) external onlyOperator nonReentrant {
        for (uint256 index = 0; index < withdrawals.length; ++index) {
            _withdraw(withdrawals[index]);
        }
    }

    /// @notice Whether each (account, withdrawal id) has been paid, in one call.
    function withdrawnMany(address[] calldata accounts, uint256[] calldata withdrawalIds)
        external
        view
        returns (bool[] memory paid)
    {
        if (accounts.length != withdrawalIds.length) revert LengthMismatch();
        paid = new bool[](accounts.length);
        for (uint256 index = 0; index < accounts.length; ++index) {
            paid[index] = withdrawn[accounts[index]][withdrawalIds[index]];
        }
    }
}
