// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {DexdVaultBase} from "./DexdVaultBase.sol";

/// @title The dexd vault, version 2: custody with provable liabilities, an exit that holds, and
/// withdrawals no one can stop.
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
///   and a total for every token ever deposited, each at most what the vault holds; any of up to
///   `MAX_GUARDIANS` guardians (or the owner) may veto a root during its challenge period;
/// - an account asks for a withdrawal on chain with `requestWithdrawal`, with no venue in the way;
///   the operator serves it (`serveRequest`) within `requestPeriod`, or anyone may `freeze` the
///   vault;
/// - once no root has come for `maxRootAge`, or a request is unserved past its deadline, anyone
///   may `freeze` it: no more deposits, operator payments or roots, and each account `exit`s,
///   once the exit root (the newest root not vetoed) is past its challenge period, with its leaf:
///   `balance + debitedWithdrawals - paid + deposited - creditedDeposits` (deposits the root did
///   not see count, withdrawals debited and never paid come back). A pair (account, token) with
///   no deposit among those the exit root covers exits with an all-zero leaf and no proof.
/// - one account's withdrawal never holds up another's: `withdrawBatch` skips (pays nothing,
///   spends no id) a withdrawal whose authorization or payment fails, and a served request whose
///   payment the account's address refuses is held for the account to `claim`.
/// @dev What it does not do: it keeps no balances (the roots carry them), it cannot tell a wrong
/// root from a right one (users and auditors check them, the guardians veto), and it has no way
/// for the owner to take funds. The venue pays a withdrawal only once a root covering its debit
/// is past its challenge period, so the exit root always counts every payment. No call walks an
/// unbounded list: the roots not vetoed form a linked list (a veto unlinks one), and the oldest
/// unserved request is kept as an index. The EIP-712 domain is version 1's ("dexd", "1"), so the
/// signatures accounts make for withdrawals are the same on both versions.
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
        uint40 committedAt;
        /// Whether it was vetoed (a vetoed root is never used for an exit).
        bool vetoed;
        /// The roots not vetoed form a list in epoch order: the one before this one and the one
        /// after, each as its epoch plus one (0: none). A vetoed root's links are cleared.
        uint32 previousGood;
        uint32 nextGood;
    }

    /// @notice One withdrawal an account asked for on chain.
    struct WithdrawalRequest {
        address account;
        /// The block time by which the operator must serve it, in seconds.
        uint64 deadline;
        bool served;
        address token;
        uint128 amount;
        /// What serving it paid (or held for the account to claim).
        uint128 paid;
    }

    /// @notice The most guardians a vault has at once.
    uint256 public constant MAX_GUARDIANS = 8;
    /// @notice The most blobs a root's data takes: the most one transaction carries.
    uint256 public constant MAX_ROOT_BLOBS = 6;
    /// @notice The gas a served request's native payment may use in the recipient's code: more
    /// would let a recipient make the operator's transaction run out of gas; a recipient that
    /// needs more is held its payment and `claim`s it.
    uint256 public constant PAYMENT_GAS_LIMIT = 50_000;

    /// @notice How long, in seconds, the vault waits for a root before anyone may freeze it.
    uint64 public immutable maxRootAge;
    /// @notice How long, in seconds, a guardian may veto a root after it is committed; a root is
    /// used for exits only once this has passed. Always shorter than `maxRootAge`.
    uint64 public immutable challengePeriod;
    /// @notice How long, in seconds, the operator has to serve a withdrawal requested on chain
    /// before anyone may freeze the vault. Longer than `challengePeriod`: a request is paid
    /// through a root past its challenge period.
    uint64 public immutable requestPeriod;

    /// Who may veto a root besides the owner, and the set that replaces it from
    /// `_pendingGuardiansFrom` on (a change waits a full challenge period, so that a root
    /// committed before it is judged by the guardians in place when it was committed).
    address[] private _guardians;
    address[] private _pendingGuardians;
    uint64 private _pendingGuardiansFrom;

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
    /// Per root, the hash of its data: of its blobs' versioned hashes, packed, or of its data
    /// given as calldata.
    bytes32[] private _rootData;

    /// The newest root not vetoed, as its epoch plus one (0: none): the tail of the list of roots
    /// not vetoed.
    uint256 private _goodRootsEnd;

    WithdrawalRequest[] private _requests;
    /// The oldest request not yet served (the number of requests when all are): requests are made
    /// in deadline order, so it is the first to fall due.
    uint256 private _oldestUnserved;

    /// @notice Payments of served requests that the account's address refused, held for it to
    /// `claim`.
    mapping(address account => mapping(address token => uint256 amount)) public held;

    /// When the vault was deployed: the freeze clock's start while no root is kept.
    uint64 private immutable _deployedAt;

    /// @notice When the newest root not vetoed was committed (the deployment, before any).
    uint64 public lastGoodRootAt;

    /// @notice Whether the vault is frozen: exits only.
    bool public frozen;

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
    /// The root's data is in the blobs of its transaction, these their versioned hashes.
    event RootDataInBlobs(uint256 indexed epoch, bytes32[] blobHashes);
    /// The root's data is its transaction's `data` argument, of this hash.
    event RootDataInCalldata(uint256 indexed epoch, bytes32 dataHash);
    event VaultFrozen(bool hasExitRoot, uint256 exitEpoch);
    event Exited(address indexed account, address indexed token, uint256 amount);
    event WithdrawalRequested(
        uint256 indexed requestId, address indexed account, address indexed token, uint256 amount, uint256 deadline
    );
    event RequestServed(uint256 indexed requestId, uint256 amount);
    event WithdrawalSkipped(uint256 indexed withdrawalId, address indexed account);
    event PaymentHeld(address indexed account, address indexed token, uint256 amount);
    event Claimed(address indexed account, address indexed token, uint256 amount);
    event GuardiansProposed(address[] guardians, uint256 effectiveFrom);

    error NotGuardian(address caller);
    error InvalidPeriods(uint64 maxRootAge, uint64 challengePeriod);
    error InvalidRequestPeriod(uint64 requestPeriod, uint64 challengePeriod);
    error TooManyGuardians(uint256 count);
    error TooManyRoots();
    error AmountTooLarge(uint256 amount);
    error UnknownRequest(uint256 requestId);
    error RequestAlreadyServed(uint256 requestId);
    error AboveRequest(uint256 requestId, uint256 amount, uint256 requested);
    error ExitsNotOpen(uint256 opensAt);
    error NothingHeld(address account, address token);
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
    error RootDataMissing();

    modifier whenNotFrozen() {
        if (frozen) revert IsFrozen();
        _;
    }

    constructor(
        address initialOwner,
        address initialOperator,
        uint64 maxRootAge_,
        uint64 challengePeriod_,
        address[] memory guardians_,
        uint64 requestPeriod_
    ) DexdVaultBase(initialOwner, initialOperator) {
        // Exits use the newest root past its challenge period; a vault that freezes for its
        // roots' age, after `maxRootAge` > `challengePeriod`, always has that root settled.
        if (maxRootAge_ == 0 || challengePeriod_ >= maxRootAge_) {
            revert InvalidPeriods(maxRootAge_, challengePeriod_);
        }
        if (requestPeriod_ <= challengePeriod_) revert InvalidRequestPeriod(requestPeriod_, challengePeriod_);
        maxRootAge = maxRootAge_;
        challengePeriod = challengePeriod_;
        requestPeriod = requestPeriod_;
        _checkGuardians(guardians_);
        _guardians = guardians_;
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

    /// @notice Pays many withdrawals in one transaction. A withdrawal whose account does not
    /// authorise it (its contract's approval may depend on the block) or whose payment the
    /// account's address refuses is skipped: nothing paid, its id not spent, `WithdrawalSkipped`
    /// announced, and the others paid. What is the operator's to get right (an id paid before,
    /// an expired or empty withdrawal) still refuses the whole batch. Returns which were paid.
    function withdrawBatch(Withdrawal[] calldata withdrawals)
        external
        onlyOperator
        nonReentrant
        whenNotFrozen
        returns (bool[] memory paidNow)
    {
        paidNow = new bool[](withdrawals.length);
        for (uint256 index = 0; index < withdrawals.length; ++index) {
            paidNow[index] = _tryWithdraw(withdrawals[index]);
        }
    }

    // ----- Withdrawals asked for on chain -----

    /// @notice Asks the operator to pay the caller `amount` of `token` (the zero address: the
    /// native asset) from its balance at the venue, with no signature and no venue in the way.
    /// The venue cancels the caller's orders as needed, debits at most what the caller holds, and
    /// serves the request through a root past its challenge period; if it is not served by its
    /// deadline, anyone may freeze the vault.
    function requestWithdrawal(address token, uint256 amount)
        external
        nonReentrant
        whenNotFrozen
        returns (uint256 requestId)
    {
        if (amount == 0) revert ZeroAmount();
        if (amount > type(uint128).max) revert AmountTooLarge(amount);
        if (!_tokenStates[token].listed) revert TokenNotListed(token);
        requestId = _requests.length;
        uint64 deadline = uint64(block.timestamp) + requestPeriod;
        _requests.push(
            WithdrawalRequest({
                account: msg.sender,
                deadline: deadline,
                served: false,
                token: token,
                amount: uint128(amount),
                paid: 0
            })
        );
        emit WithdrawalRequested(requestId, msg.sender, token, amount, deadline);
    }

    /// @notice Serves a request, paying its account `amount` (at most what it asked; 0 when it
    /// held nothing). Only the operator, never on a frozen vault. A payment the account's
    /// address refuses is held for it to `claim`, so no account can keep its request unserved.
    function serveRequest(uint256 requestId, uint256 amount) external onlyOperator nonReentrant whenNotFrozen {
        _serve(requestId, amount);
    }

    /// @notice Serves many requests in one transaction.
    function serveRequests(uint256[] calldata requestIds, uint256[] calldata amounts)
        external
        onlyOperator
        nonReentrant
        whenNotFrozen
    {
        if (requestIds.length != amounts.length) revert LengthMismatch();
        for (uint256 index = 0; index < requestIds.length; ++index) {
            _serve(requestIds[index], amounts[index]);
        }
    }

    /// @notice Pays the caller what a served request held for it.
    function claim(address token) external nonReentrant {
        uint256 amount = held[msg.sender][token];
        if (amount == 0) revert NothingHeld(msg.sender, token);
        held[msg.sender][token] = 0;
        emit Claimed(msg.sender, token, amount);
        _pay(msg.sender, token, amount);
    }

    /// @notice One request, as `requestWithdrawal` made it and `serveRequest` served it.
    function withdrawalRequest(uint256 requestId)
        external
        view
        returns (address account, address token, uint256 amount, uint256 deadline, bool served, uint256 paidAmount)
    {
        if (requestId >= _requests.length) revert UnknownRequest(requestId);
        WithdrawalRequest storage request = _requests[requestId];
        return (request.account, request.token, request.amount, request.deadline, request.served, request.paid);
    }

    /// @notice How many requests have been made (the next request's id).
    function requestCount() external view returns (uint256) {
        return _requests.length;
    }

    /// @notice The oldest request not served, if any, and its deadline.
    function oldestUnservedRequest() public view returns (bool any, uint256 requestId, uint256 deadline) {
        if (_oldestUnserved >= _requests.length) return (false, 0, 0);
        return (true, _oldestUnserved, _requests[_oldestUnserved].deadline);
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
    /// Its data (the accounts whose leaves changed and a slice of the address space, encoded
    /// as docs/root-data.md says) is in the transaction's blobs: refused without one.
    function commitRoot(
        bytes32 root,
        uint64 journalSequence,
        uint256 depositCount_,
        address[] calldata tokens,
        uint256[] calldata totals
    ) external onlyOperator whenNotFrozen {
        uint256 count = 0;
        while (count < MAX_ROOT_BLOBS && blobhash(count) != bytes32(0)) ++count;
        if (count == 0) revert RootDataMissing();
        bytes32[] memory blobHashes = new bytes32[](count);
        for (uint256 index = 0; index < count; ++index) {
            blobHashes[index] = blobhash(index);
        }
        uint256 epoch = _commitRoot(root, journalSequence, depositCount_, tokens, totals);
        _rootData.push(keccak256(abi.encodePacked(blobHashes)));
        emit RootDataInBlobs(epoch, blobHashes);
    }

    /// @notice [`commitRoot`] on a chain without blobs: the root's data is `data`.
    function commitRootWithData(
        bytes32 root,
        uint64 journalSequence,
        uint256 depositCount_,
        address[] calldata tokens,
        uint256[] calldata totals,
        bytes calldata data
    ) external onlyOperator whenNotFrozen {
        if (data.length == 0) revert RootDataMissing();
        uint256 epoch = _commitRoot(root, journalSequence, depositCount_, tokens, totals);
        bytes32 dataHash = keccak256(data);
        _rootData.push(dataHash);
        emit RootDataInCalldata(epoch, dataHash);
    }

    /// @notice The hash of a root's data: of its blobs' versioned hashes packed together, or of
    /// the data it was given as calldata.
    function rootData(uint256 epoch) external view returns (bytes32) {
        if (epoch >= _rootData.length) revert UnknownEpoch(epoch);
        return _rootData[epoch];
    }

    function _commitRoot(
        bytes32 root,
        uint64 journalSequence,
        uint256 depositCount_,
        address[] calldata tokens,
        uint256[] calldata totals
    ) private returns (uint256 epoch) {
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
            uint256 holding = holdings(tokens[index]);
            if (totals[index] > holding) revert TotalExceedsHoldings(tokens[index], totals[index], holding);
        }
        // A root without a token's total would say nothing of what is owed in it: a stolen
        // operator key could otherwise plant a root that skips the holdings check.
        for (uint256 index = 0; index < _depositedTokens.length; ++index) {
            if (!_containsSorted(tokens, _depositedTokens[index])) revert TokenMissing(_depositedTokens[index]);
        }
        epoch = _roots.length;
        if (epoch + 1 >= type(uint32).max) revert TooManyRoots();
        uint32 tail = uint32(_goodRootsEnd);
        _roots.push(
            LiabilityRoot({
                root: root,
                journalSequence: journalSequence,
                depositCount: uint64(depositCount_),
                committedAt: uint40(block.timestamp),
                vetoed: false,
                previousGood: tail,
                nextGood: 0
            })
        );
        if (tail != 0) _roots[tail - 1].nextGood = uint32(epoch + 1);
        _goodRootsEnd = epoch + 1;
        lastGoodRootAt = uint64(block.timestamp);
        emit RootCommitted(epoch, root, journalSequence, depositCount_, tokens, totals);
    }

    /// @notice A guardian's (or the owner's) veto of a root during its challenge period: the root
    /// is never used for an exit, later roots are held against the newest root not vetoed, and
    /// the freeze clock runs from it. The owner may veto because it may already replace the
    /// operator: the veto is how it undoes a root a stolen operator key planted. A frozen vault
    /// still takes vetoes of roots within their period: its exits wait for the exit root to be
    /// past its own. Bounded gas: the root is unlinked from the list of roots not vetoed.
    function veto(uint256 epoch) external {
        if (msg.sender != owner() && !isGuardian(msg.sender)) revert NotGuardian(msg.sender);
        if (epoch >= _roots.length) revert UnknownEpoch(epoch);
        LiabilityRoot storage vetoed = _roots[epoch];
        if (vetoed.vetoed) revert AlreadyVetoed(epoch);
        if (block.timestamp >= uint256(vetoed.committedAt) + challengePeriod) revert ChallengePeriodOver(epoch);
        vetoed.vetoed = true;
        emit RootVetoed(epoch);
        uint32 previous = vetoed.previousGood;
        uint32 next = vetoed.nextGood;
        vetoed.previousGood = 0;
        vetoed.nextGood = 0;
        if (previous != 0) _roots[previous - 1].nextGood = next;
        if (next != 0) {
            _roots[next - 1].previousGood = previous;
        } else {
            _goodRootsEnd = previous;
            lastGoodRootAt = previous != 0 ? _roots[previous - 1].committedAt : _deployedAt;
        }
    }

    // ----- Guardians -----

    /// @notice The guardians in place now: any one of them may veto a root.
    function guardians() public view returns (address[] memory) {
        return _guardiansInPlace();
    }

    /// @notice Whether `account` is one of the guardians in place now.
    function isGuardian(address account) public view returns (bool) {
        address[] storage current = _guardiansInPlace();
        for (uint256 index = 0; index < current.length; ++index) {
            if (current[index] == account) return true;
        }
        return false;
    }

    /// @notice The guardians proposed to replace the set, and when they take its place.
    function pendingGuardians() external view returns (address[] memory proposed, uint256 effectiveFrom) {
        if (_pendingGuardiansFrom == 0 || block.timestamp >= _pendingGuardiansFrom) return (new address[](0), 0);
        return (_pendingGuardians, _pendingGuardiansFrom);
    }

    /// @notice Replaces the guardians, one full challenge period from now: every root committed
    /// before then may still be vetoed by the guardians it was committed under. Only the owner.
    function proposeGuardians(address[] calldata newGuardians) external onlyOwner {
        _checkGuardians(newGuardians);
        if (_pendingGuardiansFrom != 0 && block.timestamp >= _pendingGuardiansFrom) {
            _guardians = _pendingGuardians;
        }
        _pendingGuardians = newGuardians;
        _pendingGuardiansFrom = uint64(block.timestamp) + challengePeriod;
        emit GuardiansProposed(newGuardians, _pendingGuardiansFrom);
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

    /// @notice Whether `account` may exit `token` with an all-zero leaf and no proof: exits are
    /// open and the vault has no exit root, or none of the pair's deposits is among those the exit
    /// root covers (so no leaf of the pair can be owed to it).
    function mayExitWithoutLeaf(address account, address token) public view returns (bool) {
        if (!frozen || block.timestamp < exitsOpenAt()) return false;
        (bool found, uint256 epoch) = _newestGoodRoot();
        if (!found) return true;
        uint256 idPlusOne = _deposits[account][token].firstIdPlusOne;
        return idPlusOne == 0 || idPlusOne - 1 >= _roots[epoch].depositCount;
    }

    /// @notice Whether the frozen vault has a root to exit with: its newest root not vetoed.
    function hasExitRoot() public view returns (bool) {
        (bool found,) = _newestGoodRoot();
        return frozen && found;
    }

    /// @notice The exit root's epoch (meaningful once `hasExitRoot`).
    function exitEpoch() public view returns (uint256) {
        (, uint256 epoch) = _newestGoodRoot();
        return epoch;
    }

    /// @notice When exits open: once the vault is frozen and its exit root is past its challenge
    /// period (a vault frozen for a request may hold a root a guardian can still veto; exits
    /// wait for it, and a veto moves the exit root back). `type(uint256).max` while not frozen.
    function exitsOpenAt() public view returns (uint256) {
        if (!frozen) return type(uint256).max;
        (bool found, uint256 epoch) = _newestGoodRoot();
        return found ? uint256(_roots[epoch].committedAt) + challengePeriod : 0;
    }

    /// @notice What the vault holds of a token (the zero address: the native asset).
    function holdings(address token) public view returns (uint256) {
        return token == address(0) ? address(this).balance : IERC20(token).balanceOf(address(this));
    }

    // ----- The exit -----

    /// @notice Freezes the vault once no root has been committed (and kept) for `maxRootAge`, or
    /// once a request is unserved past its deadline, however young the newest root. Anyone may
    /// call it; it reads two words, whatever the vault's history. Exits then use the newest root
    /// not vetoed, once it is past its challenge period (`exitsOpenAt`).
    function freeze() external whenNotFrozen {
        (bool any,, uint256 deadline) = oldestUnservedRequest();
        if (!any || block.timestamp <= deadline) {
            uint256 freezableAfter = uint256(lastGoodRootAt) + maxRootAge;
            if (any && deadline < freezableAfter) freezableAfter = deadline;
            if (block.timestamp <= freezableAfter) revert FreezeNotDue(freezableAfter);
        }
        frozen = true;
        (bool found, uint256 good) = _newestGoodRoot();
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
        uint256 opensAt = exitsOpenAt();
        if (block.timestamp < opensAt) revert ExitsNotOpen(opensAt);
        bool allZero = balance == 0 && creditedDeposits == 0 && debitedWithdrawals == 0 && proof.length == 0;
        if (!(allZero && mayExitWithoutLeaf(account, token))) {
            (bool found, uint256 epoch) = _newestGoodRoot();
            if (!found) revert InvalidProof();
            bytes32 leaf = keccak256(
                bytes.concat(keccak256(abi.encode(account, token, balance, creditedDeposits, debitedWithdrawals)))
            );
            if (!MerkleProof.verifyCalldata(proof, _roots[epoch].root, leaf)) revert InvalidProof();
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

    /// A withdrawal by the base's rule, except that one the account does not authorise, or whose
    /// payment its address refuses, is skipped (its id unspent, nothing counted) instead of
    /// refusing the operator's whole batch: the account's own code cannot hold up the others.
    function _tryWithdraw(Withdrawal calldata withdrawal) private returns (bool) {
        if (withdrawal.amount == 0) revert ZeroAmount();
        if (block.timestamp * 1000 > withdrawal.expiry) {
            revert WithdrawalExpired(withdrawal.withdrawalId, withdrawal.expiry);
        }
        if (withdrawn[withdrawal.account][withdrawal.withdrawalId]) {
            revert AlreadyWithdrawn(withdrawal.account, withdrawal.withdrawalId);
        }
        bytes32 digest = withdrawalDigest(
            withdrawal.account, withdrawal.token, withdrawal.amount, withdrawal.withdrawalId, withdrawal.expiry
        );
        if (!isAuthorized(withdrawal.account, digest, withdrawal.signature)
            || !_tryPay(withdrawal.account, withdrawal.token, withdrawal.amount)) {
            emit WithdrawalSkipped(withdrawal.withdrawalId, withdrawal.account);
            return false;
        }
        withdrawn[withdrawal.account][withdrawal.withdrawalId] = true;
        paid[withdrawal.account][withdrawal.token] += withdrawal.amount;
        emit Withdrawn(withdrawal.withdrawalId, withdrawal.account, withdrawal.token, withdrawal.amount);
        return true;
    }

    /// Serves one request: at most what it asked, once; the oldest unserved index moves past
    /// every served request (each request is passed once in the vault's life).
    function _serve(uint256 requestId, uint256 amount) private {
        if (requestId >= _requests.length) revert UnknownRequest(requestId);
        WithdrawalRequest storage request = _requests[requestId];
        if (request.served) revert RequestAlreadyServed(requestId);
        if (amount > request.amount) revert AboveRequest(requestId, amount, request.amount);
        request.served = true;
        request.paid = uint128(amount);
        uint256 oldest = _oldestUnserved;
        while (oldest < _requests.length && _requests[oldest].served) ++oldest;
        _oldestUnserved = oldest;
        emit RequestServed(requestId, amount);
        if (amount == 0) return;
        address account = request.account;
        address token = request.token;
        paid[account][token] += amount;
        if (!_tryPay(account, token, amount)) {
            held[account][token] += amount;
            emit PaymentHeld(account, token, amount);
        }
    }

    /// Pays without letting the recipient refuse for the payer: false when the token refuses the
    /// transfer or the recipient's code reverts or needs more than `PAYMENT_GAS_LIMIT` (no return
    /// data is copied, so none can cost the payer).
    function _tryPay(address account, address token, uint256 amount) private returns (bool success) {
        if (token != address(0)) return IERC20(token).trySafeTransfer(account, amount);
        uint256 gasLimit = PAYMENT_GAS_LIMIT;
        assembly ("memory-safe") {
            success := call(gasLimit, account, amount, 0, 0, 0, 0)
        }
    }

    function _checkGuardians(address[] memory proposed) private pure {
        if (proposed.length > MAX_GUARDIANS) revert TooManyGuardians(proposed.length);
        for (uint256 index = 0; index < proposed.length; ++index) {
            if (proposed[index] == address(0)) revert ZeroAddress();
        }
    }

    /// The guardian set in place now: the proposed one once its time has come.
    function _guardiansInPlace() private view returns (address[] storage) {
        if (_pendingGuardiansFrom != 0 && block.timestamp >= _pendingGuardiansFrom) return _pendingGuardians;
        return _guardians;
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
