// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {DexdVaultBase} from "./DexdVaultBase.sol";

/// @title The dexd vault, version 2: custody with provable liabilities and an exit that holds.
/// @notice Everything version 1 does (deposits credited from `Deposited` events; withdrawals paid
/// by the base's rule, `DexdVaultBase`: only by the operator, only to the account, only with the
/// account's own EIP-712 authorization, each id once), and more:
/// - it takes deposits only of the tokens its owner listed (a token's code runs in every root's
///   holdings check, so an unknown token could make every root revert);
/// - it counts, per account and token, what was deposited and what was paid, and which deposit
///   was each pair's first;
/// - the operator commits, every few minutes, the root of a Merkle tree (OpenZeppelin's
///   `StandardMerkleTree`) over every (account, token, balance, creditedDeposits,
///   debitedWithdrawals) the venue owes, with how many of the vault's deposits the tree covers
///   and a total for every token ever deposited, each at most what the vault holds; the guardian
///   (or the owner) may veto a root during its challenge period;
/// - once no root has come for `maxRootAge`, anyone may `freeze` it: no more deposits, operator
///   payments or roots, and each account `exit`s with its leaf of the last root not vetoed:
///   `balance + debitedWithdrawals - paid + deposited - creditedDeposits` (deposits the root did
///   not see count, withdrawals debited and never paid come back). A pair (account, token) with
///   no deposit among those the exit root covers exits with an all-zero leaf and no proof.
/// @dev What it does not do: it keeps no balances (the roots carry them), it cannot tell a wrong
/// root from a right one (users and auditors check them, the guardian vetoes), and it has no way
/// for the owner to take funds. The venue pays a withdrawal only once a root covering its debit
/// is past its challenge period, so the exit root always counts every payment. The EIP-712
/// domain is version 1's ("dexd", "1"), so the signatures accounts make for withdrawals are the
/// same on both versions.
contract DexdVaultV2 is DexdVaultBase {
    using SafeERC20 for IERC20;

    /// @notice One committed root of the liability tree.
    struct LiabilityRoot {
        bytes32 root;
        /// The venue's journal position the tree was built at.
        uint64 journalSequence;
        /// How many of the vault's deposits (ids `0 .. depositCount - 1`) the tree covers.
        uint64 depositCount;
        /// The block time it was committed at, in seconds.
        uint64 committedAt;
        /// Whether it was vetoed (a vetoed root is never used for an exit).
        bool vetoed;
    }

    /// @notice How long, in seconds, the vault waits for a root before anyone may freeze it.
    uint64 public immutable maxRootAge;
    /// @notice How long, in seconds, the guardian may veto a root after it is committed; a root
    /// is used for exits only once this has passed. Always shorter than `maxRootAge`.
    uint64 public immutable challengePeriod;
    /// @notice Who may veto a root during its challenge period besides the owner; the zero
    /// address for nobody else.
    address public immutable guardian;

    /// What each account deposited of each token in all, and which deposit was its first: one
    /// storage word, read and written once per deposit.
    struct Deposits {
        uint192 total;
        /// The first deposit's id plus one (0: none yet).
        uint64 firstIdPlusOne;
    }

    mapping(address account => mapping(address token => Deposits)) private _deposits;

    /// @notice What the vault paid each account of each token, in all (withdrawals and exits).
    mapping(address account => mapping(address token => uint256 amount)) public paid;

    /// Whether the owner listed a token (the zero address: the native asset), and whether it was
    /// ever deposited: one storage word a deposit reads once.
    struct TokenState {
        bool listed;
        bool deposited;
    }

    mapping(address token => TokenState) private _tokenStates;

    /// Every token ever deposited, in the order of its first deposit.
    address[] private _depositedTokens;

    LiabilityRoot[] private _roots;

    /// The newest root not vetoed, as its epoch plus one (0: none), so that a commit finds it
    /// without walking back over vetoed roots.
    uint256 private _goodRootsEnd;

    /// When the vault was deployed: the freeze clock's start while no root is kept.
    uint64 private immutable _deployedAt;

    /// @notice When the newest root not vetoed was committed (the deployment, before any).
    uint64 public lastGoodRootAt;

    /// @notice Whether the vault is frozen: exits only.
    bool public frozen;

    /// @notice Whether a root was there to exit with when the vault froze, and which.
    bool public hasExitRoot;
    uint256 public exitEpoch;

    event TokenListed(address indexed token);
    event RootCommitted(
        uint256 indexed epoch,
        bytes32 root,
        uint64 journalSequence,
        uint256 depositCount,
        address[] tokens,
        uint256[] totals
    );
    event RootVetoed(uint256 indexed epoch);
    event VaultFrozen(bool hasExitRoot, uint256 exitEpoch);
    event Exited(address indexed account, address indexed token, uint256 amount);

    error NotGuardian(address caller);
    error InvalidPeriods(uint64 maxRootAge, uint64 challengePeriod);
    error IsFrozen();
    error NotFrozen();
    error TokensNotSorted(uint256 index);
    error SequenceGoesBack(uint64 previous, uint64 given);
    error DepositCountGoesBack(uint256 previous, uint256 given);
    error DepositCountAhead(uint256 given, uint256 deposits);
    error TokenNotListed(address token);
    error TokenMissing(address token);
    error DepositTooLarge(uint256 total);
    error TotalExceedsHoldings(address token, uint256 total, uint256 holdings);
    error UnknownEpoch(uint256 epoch);
    error AlreadyVetoed(uint256 epoch);
    error ChallengePeriodOver(uint256 epoch);
    error FreezeNotDue(uint256 freezableAfter);
    error InvalidProof();
    error NothingToExit(address account, address token);

    modifier whenNotFrozen() {
        if (frozen) revert IsFrozen();
        _;
    }

    constructor(
        address initialOwner,
        address initialOperator,
        uint64 maxRootAge_,
        uint64 challengePeriod_,
        address guardian_
    ) DexdVaultBase(initialOwner, initialOperator) {
        // Exits use the newest root past its challenge period; a vault that can freeze only
        // after `maxRootAge` > `challengePeriod` always has that root settled when it freezes.
        if (maxRootAge_ == 0 || challengePeriod_ >= maxRootAge_) {
            revert InvalidPeriods(maxRootAge_, challengePeriod_);
        }
        maxRootAge = maxRootAge_;
        challengePeriod = challengePeriod_;
        guardian = guardian_;
        _deployedAt = uint64(block.timestamp);
        lastGoodRootAt = uint64(block.timestamp);
    }

    // ----- Deposits and withdrawals (version 1's, counted per account and token) -----

    /// @notice Pulls `amount` of `token` from the caller (after its `approve`) and credits the
    /// caller with what the vault actually received.
    function deposit(address token, uint256 amount) external nonReentrant whenNotPaused whenNotFrozen {
        if (token == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        TokenState memory state = _tokenStates[token];
        if (!state.listed) revert TokenNotListed(token);
        IERC20 erc20 = IERC20(token);
        uint256 before = erc20.balanceOf(address(this));
        erc20.safeTransferFrom(msg.sender, address(this), amount);
        uint256 received = erc20.balanceOf(address(this)) - before;
        if (received == 0) revert NothingReceived();
        _recordCountedDeposit(msg.sender, token, received, state);
    }

    /// @notice Credits the caller with the native asset sent along.
    function depositNative() external payable nonReentrant whenNotPaused whenNotFrozen {
        if (msg.value == 0) revert ZeroAmount();
        TokenState memory state = _tokenStates[address(0)];
        if (!state.listed) revert TokenNotListed(address(0));
        _recordCountedDeposit(msg.sender, address(0), msg.value, state);
    }

    /// @notice Pays one withdrawal. Only the operator may call it, never on a frozen vault.
    function withdraw(Withdrawal calldata withdrawal) external onlyOperator nonReentrant whenNotFrozen {
        _withdrawCounted(withdrawal);
    }

    /// @notice Pays many withdrawals in one transaction; if any of them cannot be paid, none is.
    function withdrawBatch(Withdrawal[] calldata withdrawals) external onlyOperator nonReentrant whenNotFrozen {
        for (uint256 index = 0; index < withdrawals.length; ++index) {
            _withdrawCounted(withdrawals[index]);
        }
    }

    /// @notice Whether each (account, withdrawal id) has been paid, in one call.
    function withdrawnMany(address[] calldata accounts, uint256[] calldata withdrawalIds)
        external
        view
        returns (bool[] memory isPaid)
    {
        if (accounts.length != withdrawalIds.length) revert LengthMismatch();
        isPaid = new bool[](accounts.length);
        for (uint256 index = 0; index < accounts.length; ++index) {
            isPaid[index] = withdrawn[accounts[index]][withdrawalIds[index]];
        }
    }

    // ----- Liability roots -----

    /// @notice Commits the root of the liability tree built at `journalSequence`, covering the
    /// vault's first `depositCount_` deposits, with the total per token (every balance plus every
    /// withdrawal debited and not yet paid). `tokens` must be strictly increasing, listed, and
    /// include every token ever deposited; a total above what the vault holds of its token is
    /// refused, and so are a position or a deposit count behind the newest root not vetoed.
    function commitRoot(
        bytes32 root,
        uint64 journalSequence,
        uint256 depositCount_,
        address[] calldata tokens,
        uint256[] calldata totals
    ) external onlyOperator whenNotFrozen {
        if (tokens.length != totals.length) revert LengthMismatch();
        if (depositCount_ > depositCount) revert DepositCountAhead(depositCount_, depositCount);
        (bool found, uint256 good) = _newestGoodRoot();
        if (found) {
            LiabilityRoot storage previous = _roots[good];
            if (journalSequence < previous.journalSequence) {
                revert SequenceGoesBack(previous.journalSequence, journalSequence);
            }
            if (depositCount_ < previous.depositCount) revert DepositCountGoesBack(previous.depositCount, depositCount_);
        }
        for (uint256 index = 0; index < tokens.length; ++index) {
            if (index > 0 && tokens[index] <= tokens[index - 1]) revert TokensNotSorted(index);
            if (!_tokenStates[tokens[index]].listed) revert TokenNotListed(tokens[index]);
            uint256 held = holdings(tokens[index]);
            if (totals[index] > held) revert TotalExceedsHoldings(tokens[index], totals[index], held);
        }
        // A root without a token's total would say nothing of what is owed in it: a stolen
        // operator key could otherwise plant a root that skips the holdings check.
        for (uint256 index = 0; index < _depositedTokens.length; ++index) {
            if (!_containsSorted(tokens, _depositedTokens[index])) revert TokenMissing(_depositedTokens[index]);
        }
        uint256 epoch = _roots.length;
        _roots.push(
            LiabilityRoot({
                root: root,
                journalSequence: journalSequence,
                depositCount: uint64(depositCount_),
                committedAt: uint64(block.timestamp),
                vetoed: false
            })
        );
        _goodRootsEnd = epoch + 1;
        lastGoodRootAt = uint64(block.timestamp);
        emit RootCommitted(epoch, root, journalSequence, depositCount_, tokens, totals);
    }

    /// @notice The guardian's (or the owner's) veto of a root during its challenge period: the
    /// root is never used for an exit, later roots are held against the newest root not vetoed,
    /// and the freeze clock runs from it. The owner may veto because it may already replace the
    /// operator: the veto is how it undoes a root a stolen operator key planted.
    function veto(uint256 epoch) external whenNotFrozen {
        if (msg.sender != owner() && (msg.sender != guardian || guardian == address(0))) {
            revert NotGuardian(msg.sender);
        }
        if (epoch >= _roots.length) revert UnknownEpoch(epoch);
        LiabilityRoot storage vetoed = _roots[epoch];
        if (vetoed.vetoed) revert AlreadyVetoed(epoch);
        if (block.timestamp >= uint256(vetoed.committedAt) + challengePeriod) revert ChallengePeriodOver(epoch);
        vetoed.vetoed = true;
        emit RootVetoed(epoch);
        if (epoch + 1 == _goodRootsEnd) {
            // The walk passes only roots vetoed before, each within its challenge period.
            uint256 index = epoch;
            while (index > 0 && _roots[index - 1].vetoed) --index;
            _goodRootsEnd = index;
        }
        (bool found, uint256 good) = _newestGoodRoot();
        lastGoodRootAt = found ? _roots[good].committedAt : _deployedAt;
    }

    /// @notice How many roots have been committed (the next epoch).
    function rootCount() external view returns (uint256) {
        return _roots.length;
    }

    /// @notice The root of an epoch.
    function liabilityRoot(uint256 epoch) external view returns (LiabilityRoot memory) {
        if (epoch >= _roots.length) revert UnknownEpoch(epoch);
        return _roots[epoch];
    }

    /// @notice Every token ever deposited, in the order of its first deposit: each root carries
    /// a total for each.
    function depositedTokens() external view returns (address[] memory) {
        return _depositedTokens;
    }

    /// @notice The first deposit of `token` by `account`, if there was one.
    function firstDeposit(address account, address token) external view returns (bool any, uint256 depositId) {
        uint256 idPlusOne = _deposits[account][token].firstIdPlusOne;
        return (idPlusOne != 0, idPlusOne == 0 ? 0 : idPlusOne - 1);
    }

    /// @notice What `account` deposited of `token`, in all.
    function deposited(address account, address token) public view returns (uint256) {
        return _deposits[account][token].total;
    }

    /// @notice Whether the owner listed a token (the zero address: the native asset): only listed
    /// tokens are taken as deposits.
    function listed(address token) external view returns (bool) {
        return _tokenStates[token].listed;
    }

    /// @notice Whether `account` may exit `token` with an all-zero leaf and no proof: the vault
    /// is frozen without an exit root, or none of the pair's deposits is among those the exit
    /// root covers (so no leaf of the pair can be owed to it).
    function mayExitWithoutLeaf(address account, address token) public view returns (bool) {
        if (!frozen) return false;
        if (!hasExitRoot) return true;
        uint256 idPlusOne = _deposits[account][token].firstIdPlusOne;
        return idPlusOne == 0 || idPlusOne - 1 >= _roots[exitEpoch].depositCount;
    }

    /// @notice What the vault holds of a token (the zero address: the native asset).
    function holdings(address token) public view returns (uint256) {
        return token == address(0) ? address(this).balance : IERC20(token).balanceOf(address(this));
    }

    // ----- The exit -----

    /// @notice Freezes the vault once no root has been committed (and kept) for `maxRootAge`.
    /// Anyone may call it. Exits then use the newest root not vetoed, whose challenge period
    /// has passed by then.
    function freeze() external whenNotFrozen {
        uint256 freezableAfter = uint256(lastGoodRootAt) + maxRootAge;
        if (block.timestamp <= freezableAfter) revert FreezeNotDue(freezableAfter);
        frozen = true;
        (bool found, uint256 good) = _newestGoodRoot();
        hasExitRoot = found;
        exitEpoch = good;
        emit VaultFrozen(found, good);
    }

    /// @notice Pays `account` what it is still owed of `token` by its leaf in the exit root:
    /// `balance + debitedWithdrawals + deposited - creditedDeposits - paid`, where `paid`
    /// counts every withdrawal and exit paid so far, so a second exit of the same leaf pays
    /// nothing. Anyone may send it; only `account` is paid. A pair that
    /// [`mayExitWithoutLeaf`] sends the all-zero leaf with an empty proof and gets back what it
    /// deposited and was not paid; a pair with a leaf may still send its leaf afterwards and
    /// is paid the rest, so nobody's exit can be spoilt by someone else's all-zero exit.
    function exit(
        address account,
        address token,
        uint256 balance,
        uint256 creditedDeposits,
        uint256 debitedWithdrawals,
        bytes32[] calldata proof
    ) external nonReentrant {
        if (!frozen) revert NotFrozen();
        bool allZero = balance == 0 && creditedDeposits == 0 && debitedWithdrawals == 0 && proof.length == 0;
        if (!(allZero && mayExitWithoutLeaf(account, token))) {
            if (!hasExitRoot) revert InvalidProof();
            bytes32 leaf = keccak256(
                bytes.concat(keccak256(abi.encode(account, token, balance, creditedDeposits, debitedWithdrawals)))
            );
            if (!MerkleProof.verifyCalldata(proof, _roots[exitEpoch].root, leaf)) revert InvalidProof();
        }
        uint256 owed = balance + debitedWithdrawals + deposited(account, token);
        uint256 settled = creditedDeposits + paid[account][token];
        if (owed <= settled) revert NothingToExit(account, token);
        uint256 amount = owed - settled;
        // Effects before the transfer: the exit is spent before any token code runs.
        paid[account][token] += amount;
        emit Exited(account, token, amount);
        _pay(account, token, amount);
    }

    // ----- The owner -----

    /// @notice Lists a token (the zero address: the native asset): deposits of it are taken from
    /// now on. A listing is for good, so no deposit can ever be stranded by a delisting.
    function listToken(address token) external onlyOwner {
        if (_tokenStates[token].listed) return;
        _tokenStates[token].listed = true;
        emit TokenListed(token);
    }

    // ----- Inside -----

    function _recordCountedDeposit(address account, address token, uint256 amount, TokenState memory state) private {
        uint256 depositId = depositCount;
        depositCount = depositId + 1;
        Deposits memory deposits = _deposits[account][token];
        uint256 total = uint256(deposits.total) + amount;
        // 2^192 units: no token's supply comes near it.
        if (total > type(uint192).max) revert DepositTooLarge(total);
        deposits.total = uint192(total);
        if (deposits.firstIdPlusOne == 0) deposits.firstIdPlusOne = uint64(depositId + 1);
        _deposits[account][token] = deposits;
        if (!state.deposited) {
            _tokenStates[token].deposited = true;
            _depositedTokens.push(token);
        }
        emit Deposited(depositId, account, token, amount);
    }

    /// A withdrawal by the base's rule, counted in what the account was paid of its token.
    function _withdrawCounted(Withdrawal calldata withdrawal) private {
        paid[withdrawal.account][withdrawal.token] += withdrawal.amount;
        _withdraw(withdrawal);
    }

    function _pay(address account, address token, uint256 amount) private {
        if (token == address(0)) {
            Address.sendValue(payable(account), amount);
        } else {
            IERC20(token).safeTransfer(account, amount);
        }
    }

    /// Whether the strictly increasing `tokens` hold `token`.
    function _containsSorted(address[] calldata tokens, address token) private pure returns (bool) {
        uint256 low = 0;
        uint256 high = tokens.length;
        while (low < high) {
            uint256 middle = (low + high) / 2;
            if (tokens[middle] < token) low = middle + 1;
            else high = middle;
        }
        return low < tokens.length && tokens[low] == token;
    }

    /// The newest root not vetoed, if any.
    function _newestGoodRoot() private view returns (bool found, uint256 epoch) {
        return _goodRootsEnd == 0 ? (false, 0) : (true, _goodRootsEnd - 1);
    }
}
