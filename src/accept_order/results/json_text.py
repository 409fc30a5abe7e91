"""A result document as JSON text: byte for byte `json.dumps(document, indent=1, allow_nan=False)`, faster.

With `indent`, the standard library encodes in pure Python, token by token: a run of 100,000 records took
~1.05 s here against ~0.23 s for the same document without indent (the C encoder), and a result is written
while the user waits for the prompt. A container holding only scalars (a record, a histogram, a list of
numbers: nearly every byte of a big result) is laid out by the C encoder instead: with `indent=None` it
accepts any separators, and the separator ",\\n" + the item indent gives exactly the lines `indent=1` writes
between items. Containers that hold containers are laid out here, one line per item as `indent=1` does.
"""

from __future__ import annotations

import functools
import json
import json.encoder
from collections.abc import Callable
from typing import Any

# The types a container of scalars holds; a subclass (an IntEnum, a str subclass) takes the general path,
# which encodes it as json does.
_SCALAR_TYPES = frozenset((str, int, float, bool, type(None)))
_PLAIN = frozenset((dict, list, tuple))


@functools.cache
def _flat_encoder(depth: int) -> Callable[[Any], str]:
    """Encodes a container of scalars whose items sit at `depth` + 1, its brackets on the items' lines.

    json.dumps with these separators would do the same, but builds an encoder per call: for 100,000 records
    that set-up was most of the time. The C encoder's maker is json's own (json.encoder.c_make_encoder, what
    JSONEncoder.iterencode uses); where the interpreter has none, json.dumps does it."""
    separator = ",\n" + " " * (depth + 1)
    make = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed: an implementation detail
    if make is None:
        return functools.partial(json.dumps, allow_nan=False, separators=(separator, ": "))
    default = json.JSONEncoder().default  # raises json's TypeError for what it cannot encode
    # No circular-reference markers: a container of scalars cannot hold itself.
    encode = make(None, default, json.encoder.encode_basestring_ascii, None, ": ", separator, False, False, False)
    return lambda value: "".join(encode(value, 0))


def _key(key: Any) -> str:
    """A dict key as json writes it (a non-string key is converted as json converts it, or refused alike)."""
    return json.dumps({key: 0}, allow_nan=False)[1:-4]


def _encode(value: Any, depth: int) -> str:
    is_dict = isinstance(value, dict)
    if not is_dict and not isinstance(value, (list, tuple)):
        # A scalar, or what json refuses (TypeError, ValueError for NaN) with json's own message.
        return json.dumps(value, allow_nan=False)
    if not value:
        return "{}" if is_dict else "[]"
    inner = "\n" + " " * (depth + 1)
    items = value.values() if is_dict else value
    # Only a plain container is checked by its values(): json encodes a dict by its items(), which a subclass's
    # values() need not agree with; a subclass takes the general path, which reads items() as json does.
    if type(value) in _PLAIN and set(map(type, items)) <= _SCALAR_TYPES:  # in C: once per record of a big result
        text = _flat_encoder(depth)(value)[1:-1]
    elif is_dict:
        text = ("," + inner).join([_key(k) + ": " + _encode(v, depth + 1) for k, v in value.items()])
    else:  # a list of records, mostly: each record of scalars laid out here without a call of _encode
        flat = _flat_encoder(depth + 1)
        opened, closed = "{" + inner + " ", inner + "}"
        text = ("," + inner).join(
            [
                opened + flat(v)[1:-1] + closed
                if type(v) is dict and v and set(map(type, v.values())) <= _SCALAR_TYPES
                else _encode(v, depth + 1)
                for v in value
            ]
        )
    return ("{" if is_dict else "[") + inner + text + "\n" + " " * depth + ("}" if is_dict else "]")


def document_text(document: Any) -> str:
    """`json.dumps(document, indent=1, allow_nan=False)`: the same text, the same errors (TypeError, ValueError;
    RecursionError for a document nested too deep or holding itself)."""
    return _encode(document, 0)
