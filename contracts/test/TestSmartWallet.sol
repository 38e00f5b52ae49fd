// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @title A smart wallet for the tests: one owner, who makes its calls and whose ECDSA signature
/// it approves through ERC-1271, as the simplest contract accounts do. `FickleWallet` extends it
/// with approvals and payments that change.
contract TestSmartWallet is IERC1271 {
    address public immutable owner;

    error NotOwner(address caller);

    constructor(address owner_) {
        owner = owner_;
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    receive() external payable virtual {}

    /// @notice Calls `target` with `value` and `data` on the owner's behalf.
    function execute(address target, uint256 value, bytes calldata data) external onlyOwner returns (bytes memory) {
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
        if (_approvesNow() && recoverError == ECDSA.RecoverError.NoError && signer == owner) {
            return IERC1271.isValidSignature.selector;
        }
        return 0xffffffff;
    }

    /// @dev Whether the wallet approves its owner's signatures in this call: always, here.
    function _approvesNow() internal view virtual returns (bool) {
        return true;
    }
}
