"""schemathesis hooks for scripts/schemathesis: the one documented exception to the document.

A mixed-case address must carry a valid EIP-55 checksum, which no JSON Schema pattern can state
(the checksum is a keccak-256 of the address). A valid-data case's addresses are therefore sent in
lower case (no checksum needed, the same account) before the call. Invalid-data cases are left
alone: the server must refuse them, and a bad checksum is one more way to be invalid.
"""

import re

import schemathesis

ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
ADDRESS_FIELDS = ("account", "from")


def _lower_addresses(container):
    if isinstance(container, dict):
        for name in ADDRESS_FIELDS:
            value = container.get(name)
            if isinstance(value, str) and ADDRESS.match(value):
                container[name] = value.lower()


@schemathesis.hook
def before_call(context, case, kwargs):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    _lower_addresses(case.query)
    _lower_addresses(case.body)
