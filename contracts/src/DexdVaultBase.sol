// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";

/// @title What every version of the dexd vault shares.
/// @notice The operator, the deposit count, and the withdrawal rule: only the operator pays, only
/// to the account, only with the account's own EIP-712 authorization of exactly that token,
/// amount, withdrawal id and expiry (its ECDSA signature, or for a contract account such as a
/// smart wallet its ERC-1271 approval), and each id at most once. The owner replaces the
/// operator and pauses deposits, and can never renounce (nobody could then replace a lost
/// operator). The EIP-712 domain is ("dexd", "1") in every version, so that an account's
/// withdrawal signatures are the same on all of them.
/// @dev What it does not do: take deposits or pay (each version decides what it counts and when
/// it pays); it has no way for the owner to take funds.
abstract contract DexdVaultBase is EIP712, ReentrancyGuard, Ownable2Step, Pausable {
    using SafeERC20 for IERC20;

    /// @notice The EIP-712 type an account signs to authorise one withdrawal. `expiry` is in
    /// milliseconds since the Unix epoch, as everywhere in dexd's API.
    bytes32 public constant WITHDRAWAL_TYPEHASH =
        keccak256("Withdrawal(address account,address token,uint256 amount,uint256 withdrawalId,uint256 expiry)");

    /// @notice One withdrawal as the operator submits it.
    struct Withdrawal {
        address account;
        /// The ERC-20 token, or the zero address for the native asset.
        address token;
        uint256 amount;
        uint256 withdrawalId;
        /// Milliseconds since the Unix epoch after which the authorization is void.
        uint256 expiry;
        /// The account's signature over the typed data: 65 bytes of ECDSA for an externally owned
        /// account, whatever its `isValidSignature` takes for a contract account (ERC-1271).
        bytes signature;
    }

    /// @notice The gas a contract account's `isValidSignature` may use: enough for a smart
    /// wallet's check, too little for an account to make the operator's batch expensive.
    uint256 public constant ERC1271_GAS_LIMIT = 100_000;

    /// @notice The only address allowed to pay withdrawals.
    address public operator;

    /// @notice How many deposits have been made; the next one gets this id.
    uint256 public depositCount;

    /// @notice Whether an account's withdrawal id has been paid.
    mapping(address account => mapping(uint256 withdrawalId => bool paid)) public withdrawn;

    event Deposited(uint256 indexed depositId, address indexed account, address indexed token, uint256 amount);
    event Withdrawn(uint256 indexed withdrawalId, address indexed account, address indexed token, uint256 amount);
    event OperatorChanged(address indexed previousOperator, address indexed newOperator);

    error NotOperator(address caller);
    error ZeroAddress();
    error ZeroAmount();
    error NothingReceived();
    error WithdrawalExpired(uint256 withdrawalId, uint256 expiry);
    error AlreadyWithdrawn(address account, uint256 withdrawalId);
    error InvalidAuthorization(address account, uint256 withdrawalId);
    error LengthMismatch();
    error OwnershipCannotBeRenounced();

    modifier onlyOperator() {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        _;
    }

    constructor(address initialOwner, address initialOperator) EIP712("dexd", "1") Ownable(initialOwner) {
        if (initialOperator == address(0)) revert ZeroAddress();
        operator = initialOperator;
        emit OperatorChanged(address(0), initialOperator);
    }

    /// @notice The EIP-712 digest an account signs for a withdrawal.
    function withdrawalDigest(address account, address token, uint256 amount, uint256 withdrawalId, uint256 expiry)
        public
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(keccak256(abi.encode(WITHDRAWAL_TYPEHASH, account, token, amount, withdrawalId, expiry)));
    }

    /// @notice Replaces the operator. Only the owner may call it.
    function setOperator(address newOperator) external onlyOwner {
        if (newOperator == address(0)) revert ZeroAddress();
        emit OperatorChanged(operator, newOperator);
        operator = newOperator;
    }

    /// @notice Refused: without an owner nobody could ever replace a lost or compromised operator.
    function renounceOwnership() public view override onlyOwner {
        revert OwnershipCannotBeRenounced();
    }

    /// @notice Stops deposits (withdrawals go on, so that nobody's funds are held).
    function pause() external onlyOwner {
        _pause();
    }

    /// @notice Takes deposits again.
    function unpause() external onlyOwner {
        _unpause();
    }

    /// @notice Whether `signature` is the account's authorization of `digest`: its own ECDSA
    /// signature (low `s`, `v` 27 or 28), or, for an account with code, its ERC-1271
    /// `isValidSignature` answering the magic value within `ERC1271_GAS_LIMIT` gas. Public so
    /// that the venue asks the vault's own rule before it debits a withdrawal.
    function isAuthorized(address account, bytes32 digest, bytes calldata signature) public view returns (bool) {
        (address signer, ECDSA.RecoverError recoverError,) = ECDSA.tryRecoverCalldata(digest, signature);
        if (recoverError == ECDSA.RecoverError.NoError && signer == account) {
            return true;
        }
        if (account.code.length == 0) {
            return false;
        }
        (bool success, bytes memory result) = account.staticcall{gas: ERC1271_GAS_LIMIT}(
            abi.encodeCall(IERC1271.isValidSignature, (digest, signature))
        );
        return success && result.length >= 32 && bytes32(result) == bytes32(IERC1271.isValidSignature.selector);
    }

    /// Gives a deposit the next id and announces it.
    function _recordDeposit(address account, address token, uint256 amount) internal {
        uint256 depositId = depositCount;
        depositCount = depositId + 1;
        emit Deposited(depositId, account, token, amount);
    }

    /// Pays a withdrawal that meets the rule (a positive amount, not expired, its id unspent, the
    /// account's own authorization): spends its id, announces it, then transfers. Effects before
    /// the transfer: the id is spent before any token code runs.
    function _withdraw(Withdrawal calldata withdrawal) internal {
        if (withdrawal.amount == 0) revert ZeroAmount();
        // Milliseconds, as the venue's API writes every time.
        if (block.timestamp * 1000 > withdrawal.expiry) {
            revert WithdrawalExpired(withdrawal.withdrawalId, withdrawal.expiry);
        }
        if (withdrawn[withdrawal.account][withdrawal.withdrawalId]) {
            revert AlreadyWithdrawn(withdrawal.account, withdrawal.withdrawalId);
        }
        bytes32 digest = withdrawalDigest(
            withdrawal.account, withdrawal.token, withdrawal.amount, withdrawal.withdrawalId, withdrawal.expiry
        );
        if (!isAuthorized(withdrawal.account, digest, withdrawal.signature)) {
            revert InvalidAuthorization(withdrawal.account, withdrawal.withdrawalId);
        }
        withdrawn[withdrawal.account][withdrawal.withdrawalId] = true;
        emit Withdrawn(withdrawal.withdrawalId, withdrawal.account, withdrawal.token, withdrawal.amount);
        if (withdrawal.token == address(0)) {
            Address.sendValue(payable(withdrawal.account), withdrawal.amount);
        } else {
            IERC20(withdrawal.token).safeTransfer(withdrawal.account, withdrawal.amount);
        }
    }
}
