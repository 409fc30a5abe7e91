"""A result file's text is json.dumps(indent=1)'s, byte for byte, from the faster writer (results/json_text.py)."""

from __future__ import annotations

import enum
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from accept_order.results.json_text import document_text

DATA = Path(__file__).parent / "data"
SCALARS: list[Any] = [0, -3, 2.5, 1e300, 0.1, True, False, None, "", "x", 'é\n"\\', "\x1b[31m", "\u2028", 10**30]
KEYS: list[Any] = ["a", "b", "ü", "\x00", "k1", 1, -2, 2.5, True, None]


class Level(enum.IntEnum):
    LOW = 1


def document(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.25:
        return {rng.choice(KEYS): document(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 4 and roll < 0.4:
        return [document(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 4 and roll < 0.45:  # a list of records, the shape of nearly every byte of a big result
        return [{k: rng.choice(SCALARS) for k in rng.sample(KEYS, 3)} for _ in range(rng.randint(1, 4))]
    return rng.choice([*SCALARS, (1, "t"), Level.LOW])


def test_random_documents_are_written_as_json_writes_them() -> None:
    rng = random.Random(30)
    for _ in range(3000):
        doc = document(rng)
        assert document_text(doc) == json.dumps(doc, indent=1, allow_nan=False), doc


@pytest.mark.parametrize("path", sorted(DATA.rglob("*.json")), ids=lambda p: str(p.relative_to(DATA)))
def test_every_fixture_is_written_as_json_writes_it(path: Path) -> None:
    doc = json.loads(path.read_text())
    assert document_text(doc) == json.dumps(doc, indent=1, allow_nan=False)


@pytest.mark.parametrize(
    "doc, error",
    [
        ({"a": [math.nan]}, ValueError),
        ([1, {"b": math.inf}], ValueError),
        ({"a": {"b": object()}}, TypeError),
        ({(1, 2): 1}, TypeError),
        ({"x": {(1,): {"y": 1}}}, TypeError),
    ],
)
def test_what_json_refuses_is_refused_alike(doc: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        json.dumps(doc, indent=1, allow_nan=False)
    with pytest.raises(error):
        document_text(doc)


def test_without_the_c_encoder_the_text_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without json's C encoder (PyPy, a build without _json) takes json.dumps's own path."""
    from accept_order.results import json_text

    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    json_text._flat_encoder.cache_clear()
    try:
        rng = random.Random(31)
        for _ in range(300):
            doc = document(rng)
            assert document_text(doc) == json.dumps(doc, indent=1, allow_nan=False), doc
    finally:
        json_text._flat_encoder.cache_clear()
