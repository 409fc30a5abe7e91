"""What results/json_text.py must refuse or lay out as json.dumps(indent=1, allow_nan=False) does, beyond the
random documents of test_json_text.py: NaN where a container also holds containers (the general path, not
the C encoder's), the refusals without the C encoder, and a dict subclass whose values() disagree with items()."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from accept_order.results import json_text
from accept_order.results.json_text import document_text

REFUSED: list[tuple[Any, type[Exception]]] = [
    ({"a": [math.nan, [1]]}, ValueError),  # a scalar beside a container: encoded one by one
    ({"a": {"b": -math.inf, "c": {}}}, ValueError),
    ({math.nan: [1]}, ValueError),  # a key of a dict that holds a container
    ({"a": {math.inf: {"b": 1}}}, ValueError),
    ({"a": [b"bytes", [1]]}, TypeError),
    ({"a": [1, 2, math.nan]}, ValueError),  # and the C encoder's own refusals
    ({"a": {math.nan: 1}}, ValueError),
]


def refused_alike(doc: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        json.dumps(doc, indent=1, allow_nan=False)
    with pytest.raises(error):
        document_text(doc)


@pytest.mark.parametrize("doc, error", REFUSED)
def test_what_json_refuses_is_refused_alike_on_every_path(doc: Any, error: type[Exception]) -> None:
    refused_alike(doc, error)


def test_without_the_c_encoder_the_refusals_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    json_text._flat_encoder.cache_clear()
    try:
        for doc, error in REFUSED:
            refused_alike(doc, error)
    finally:
        json_text._flat_encoder.cache_clear()


class Masked(dict[str, Any]):
    """values() that disagree with items(): json writes what items() gives."""

    def values(self) -> Any:
        return [1]


def test_a_dict_subclass_is_written_by_its_items_as_json_writes_it() -> None:
    doc = {"a": Masked(y=[2], z={"k": 3})}
    assert document_text(doc) == json.dumps(doc, indent=1, allow_nan=False)
