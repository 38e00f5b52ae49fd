"""schemathesis hooks for scripts/schemathesis: the documented exceptions to the document.

A mixed-case address must carry a valid EIP-55 checksum, which no JSON Schema pattern can state
(the checksum is a keccak-256 of the address). A valid-data case's addresses (a batch's items'
too) are therefore sent in lower case (no checksum needed, the same account) before the call. Invalid-data cases are left
alone: the server must refuse them, and a bad checksum is one more way to be invalid.

A read with `X-Dexd-Min-Sequence: n` waits for journal position n, and the contract answers 503
when the node has not reached it (at once when the journal does not reach it): a 5xx that
schemathesis counts as a server error, for any number it draws beyond the few positions the run
writes. A well-formed position is therefore sent as 0, which every node has reached; a malformed
one is left alone (400). The waits and the 503 are tested in crates/dexd/tests (operability.rs,
postgres_journal.rs).
"""

import re

import schemathesis

ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
ADDRESS_FIELDS = ("account", "from", "agent")
# A batch's items carry their own accounts.
LIST_FIELDS = ("orders", "cancels")
POSITION = re.compile(r"^[0-9]{1,19}$")
MIN_SEQUENCE_HEADER = "X-Dexd-Min-Sequence"


def _lower_addresses(container):
    if isinstance(container, dict):
        for name in ADDRESS_FIELDS:
            value = container.get(name)
            if isinstance(value, str) and ADDRESS.match(value):
                container[name] = value.lower()
        for name in LIST_FIELDS:
            items = container.get(name)
            if isinstance(items, list):
                for item in items:
                    _lower_addresses(item)


def _reached_position(headers):
    if headers:
        for name, value in headers.items():
            if name.lower() == MIN_SEQUENCE_HEADER.lower() and isinstance(value, str) and POSITION.match(value):
                headers[name] = "0"


@schemathesis.hook
def before_call(context, case, kwargs):
    _reached_position(case.headers)
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    _lower_addresses(case.query)
    _lower_addresses(case.body)
