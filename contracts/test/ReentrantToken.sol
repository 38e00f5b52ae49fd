// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title A test token that, when armed, calls back into a target during every transfer: it
/// stands for a malicious or careless token that re-enters the vault.
contract ReentrantToken is ERC20 {
    address public target;
    bytes public callback;

    constructor() ERC20("Reentrant", "REENTER") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @notice Arms the token: every later transfer calls `target` with `callback_` and
    /// bubbles up its revert.
    function arm(address target_, bytes calldata callback_) external {
        target = target_;
        callback = callback_;
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (target != address(0) && from != address(0) && to != address(0)) {
            (bool ok, bytes memory reason) = target.call(callback);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(reason, 0x20), mload(reason))
                }
            }
        }
    }
}
