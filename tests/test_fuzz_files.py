"""Every field of every result file, mutated: `show` (each format), `merge` and `plot` end with exit 0 or with
one line on stderr and exit 1, never a traceback (results/schema.py checks a whole document on load).

The mutations come from the saved fixtures of every kind (tests/data/v1 and v2): for each leaf, wrong types,
negative, huge, NaN and missing; for each object, an extra key and missing; for each list, empty and very
long. Every one of them (90,598 over the fixtures) would take the suite an hour; it runs a deterministic
sample of each fixture's instead, stratified so that every kind of mutation and every top-level field is
tried at least once, filled up at random to SAMPLE (a few seconds in all).

Each mutated file is read and checked once, by the first command run on it: the others get what that load
returned (loading the same bytes again gives the same document or the same error line), so that the sample's
time goes to what differs between the commands: rendering, exporting, merging and drawing. A refused load is the
same line through every command (cli/app.py's one handler): each command says a fixture's first refusal in each
top-level field (schema, kind, runs, server...), and later refusals in that field go through the first command only
(the sample's command runs 7,854 -> 2,830). Not once per fixture: its first refusal is always its schema's, before
its kind's shape is read, and a command that mishandled only a refusal of its kind's own fields (or read the
file's kind before loading it) went unseen.
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from accept_order.cli.app import main
from accept_order.core.errors import ResultFileError
from accept_order.experiments import documents, find

DATA = Path(__file__).parent / "data"
FIXTURES = sorted((DATA / "v1").glob("*.json")) + sorted((DATA / "v2").glob("*.json"))
WRONG: tuple[Any, ...] = (None, "", "x", True, -1, 0.5, 1e30, 10**30, float("nan"), [], {})
LONG = 5000  # items in a "very long" list
# of records (runs, rounds, counters): past MAX_WORKERS (512) still, without a 5000-run document to show
LONG_OF_RECORDS = 600
SAMPLE = 45  # mutations per fixture in the normal suite (~9 s in all)
PLOT_EVERY = 6  # of those, every PLOT_EVERYth is also drawn (a picture costs ~50 ms)

Path_ = tuple[str | int, ...]


def _walk(value: Any, at: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every value of a document with its path; of a list, its first two items and its last one."""
    yield at, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, (*at, key))
    elif isinstance(value, list):
        picked = sorted({0, 1, len(value) - 1} & set(range(len(value))))
        for index in picked:
            yield from _walk(value[index], (*at, index))


def mutations(document: dict[str, Any]) -> Iterator[tuple[str, Path_, Any]]:
    """(what, path, new value) for every mutation of the document; new value `...` deletes the field."""
    for at, value in _walk(document):
        if not at:
            continue
        if isinstance(value, dict):
            yield "extra key", at, {**value, "zz_extra": {"a": [1, "b"]}}
            yield "emptied", at, {}
        elif isinstance(value, list):
            yield "empty", at, []
            item = value[0] if value else 1
            yield "very long", at, [item] * (LONG_OF_RECORDS if isinstance(item, dict | list) else LONG)
        for wrong in WRONG:
            if type(wrong) is not type(value) or wrong != value:
                yield f"= {wrong!r}"[:30], at, wrong
        if isinstance(at[-1], str):
            yield "missing", at, ...


def mutated(document: dict[str, Any], at: Path_, new: Any) -> dict[str, Any]:
    """The document with one field changed: only the objects and lists on the way to it are copied (the rest is
    shared with `document`, which is only ever written out), not the whole document for each mutation."""
    copied = dict(document)
    parent: Any = copied
    for key in at[:-1]:
        child = parent[key]
        parent[key] = child = dict(child) if isinstance(child, dict) else list(child)
        parent = child
    if new is ...:
        del parent[at[-1]]
    else:
        parent[at[-1]] = new
    return copied


def sibling(document: dict[str, Any]) -> dict[str, Any]:
    """The same experiment measured another time: what a file may be merged with."""
    other = copy.deepcopy(document)
    for run in other["runs"] if "runs" in other else [other]:
        if "environment" in run:
            run["environment"]["started_at"] = "2000-01-01T00:00:00+00:00"
    return other


def commands(kind: str, path: Path, other: Path, picture: Path, number: int) -> list[list[str]]:
    """What is run on the `number`th mutated file: every format its kind has (its CSV tables in turn),
    merge with another file of the experiment, and, for every PLOT_EVERYth, plot."""
    experiment = find(kind)
    assert experiment is not None
    runs = [["show", str(path)], ["show", str(path), "--format", "json"]]
    tables = list(experiment.tables)
    if tables:
        runs.append(["show", str(path), "--format", "csv", "--table", tables[number % len(tables)]])
    if experiment.latency_runs is not None:
        runs.append(["show", str(path), "--format", "hdr"])
    runs.append(["merge", str(path), str(other)])
    if number % PLOT_EVERY == 0:
        runs.append(["plot", str(path), "-o", str(picture)])
    return runs


def command_of(args: list[str]) -> str:
    """The command and format of `args` ('show', 'show csv', 'merge', 'plot'), without its files and table."""
    return f"{args[0]} {args[3]}" if args[2:3] == ["--format"] else args[0]


def check(args: list[str], what: str) -> int:
    """Run the CLI in-process; exit 0, or exactly one error line and exit 1. Returns the exit code."""
    result = CliRunner().invoke(main, args, catch_exceptions=True, env={"COLUMNS": "120"})
    where = f"accept-order {' '.join(args)} ({what})"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{where} raised {result.exception!r}") from result.exception
    assert result.exit_code in (0, 1), f"{where}: exit {result.exit_code}: {result.stderr!r}"
    if result.exit_code == 1:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("accept-order: error: "), f"{where}: {lines!r}"
        assert "Traceback" not in result.output
    return result.exit_code


def field_of(at: Path_) -> tuple[str, ...]:
    """The field a mutation is in, as its first two keys (`runs`/`histogram`, `server`/`mode`): list indices
    left out, so each run of a multi-run file counts as the same field."""
    return tuple(key for key in at if isinstance(key, str))[:2]


def stratified(every: list[tuple[str, Path_, Any]], sample: int, seed: str) -> list[tuple[str, Path_, Any]]:
    """One mutation of each kind (`what`) and one in each field (two keys deep), then others at random up to
    `sample` (or more, when the strata alone need more); the same for a seed in any interpreter."""
    rng = random.Random(seed)
    chosen: dict[int, None] = {}
    for stratum in (lambda m: m[0], lambda m: field_of(m[1])):
        groups: dict[Any, list[int]] = {}
        for index, mutation in enumerate(every):
            groups.setdefault(stratum(mutation), []).append(index)
        for indices in groups.values():  # in the order first met: the document's, never a hash's
            if not any(i in chosen for i in indices):
                chosen[rng.choice(indices)] = None
    rest = [i for i in range(len(every)) if i not in chosen]
    chosen.update(dict.fromkeys(rng.sample(rest, max(0, min(sample - len(chosen), len(rest))))))
    return [every[i] for i in sorted(chosen)]


Loaded = tuple[str, dict[str, Any]]


@contextmanager
def each_file_loaded_once() -> Iterator[dict[tuple[str, bytes], Loaded | str]]:
    """documents.load (every command's way in: show, merge, plot) remembers its answer for a path and its
    bytes: a document (handed out as a fresh copy, as a new load would give) or a refusal's line."""
    answers: dict[tuple[str, bytes], Loaded | str] = {}
    texts: dict[tuple[str, bytes], str] = {}  # a loaded document as JSON, written out once, not per command
    load: Callable[[str | os.PathLike[str]], Loaded] = documents.load

    def load_once(path: str | os.PathLike[str]) -> Loaded:
        key = (os.fspath(path), Path(path).read_bytes())
        if key not in answers:
            try:
                answers[key] = load(path)
            except ResultFileError as exc:
                answers[key] = str(exc)
        answer = answers[key]
        if isinstance(answer, str):
            raise ResultFileError(answer)
        kind, document = answer
        if key not in texts:
            texts[key] = json.dumps(document)  # a checked document holds JSON's values only
        return kind, json.loads(texts[key])

    documents.load = load_once
    try:
        yield answers
    finally:
        documents.load = load


def fuzz(fixture: Path, tmp_path: Path, sample: int) -> dict[int, int]:
    """A deterministic, stratified sample of `sample` mutations of one fixture, each command on it."""
    pytest.importorskip("matplotlib")
    document = json.loads(fixture.read_text())
    chosen = stratified(list(mutations(document)), sample, fixture.name)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(sibling(document)))
    path, picture = tmp_path / "mutated.json", tmp_path / "picture.png"
    codes = {0: 0, 1: 0}
    refusing: set[tuple[str, str | int]] = set()  # (command, top-level field) seen saying a refused load's line
    with each_file_loaded_once() as answers:
        for number, (what, at, new) in enumerate(chosen):
            text = json.dumps(mutated(document, at, new))  # NaN is written as NaN, as a hand edit might
            # A new file, not the last one truncated: ext4 flushes a file rewritten in place as it is closed
            # (auto_da_alloc), 4 ms a write against 0.5 ms (0.36 against 0.16 ms of CPU)
            path.unlink(missing_ok=True)
            path.write_text(text)
            label = f"{fixture.parent.name}/{fixture.name} {'.'.join(map(str, at))} {what}"
            key = (str(path), text.encode())
            for args in commands(document["kind"], path, other, picture, number):
                if isinstance(answers.get(key), str) and (command_of(args), at[0]) in refusing:
                    continue  # a refusal in this field again, through a command that has already said one
                codes[check(args, label)] += 1
                if isinstance(answers.get(key), str):
                    refusing.add((command_of(args), at[0]))
            assert key in answers, f"{label}: the commands did not load it"
    return codes


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_a_sample_of_mutations_never_ends_in_a_traceback(fixture: Path, tmp_path: Path) -> None:
    codes = fuzz(fixture, tmp_path, SAMPLE)
    assert codes[1], "no mutation was refused: the sample tests nothing"


def test_a_command_mishandling_only_one_fields_refusal_fails_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge that reads a file's kind before loading it (an AttributeError where the kind is no string): only a
    refusal in the kind field reaches it, never the fixture's first (its schema's); the sample still fails on it."""
    from accept_order.cli import merge as merge_command

    merging = merge_command.merge.callback
    assert merging is not None

    def peeking(paths: tuple[str, ...], concurrent: bool, json_path: str | None) -> None:
        json.loads(Path(paths[0]).read_text())["kind"].lower()  # a dispatch on the raw file's kind
        merging(paths, concurrent, json_path)

    monkeypatch.setattr(merge_command.merge, "callback", peeking)
    with pytest.raises(
        AssertionError, match=r"accept-order merge .*\(v2/compare\.json kind = .*\) raised AttributeError"
    ):
        fuzz(DATA / "v2" / "compare.json", tmp_path, SAMPLE)


def test_the_sample_tries_every_kind_of_mutation_in_every_field() -> None:
    for fixture in FIXTURES:
        every = list(mutations(json.loads(fixture.read_text())))
        chosen = stratified(every, SAMPLE, fixture.name)
        assert {m[0] for m in chosen} == {m[0] for m in every}, fixture.name
        assert {field_of(m[1]) for m in chosen} == {field_of(m[1]) for m in every}, fixture.name


def test_the_sample_is_the_same_in_any_interpreter() -> None:
    """Two interpreters with different string hashes pick the same mutations (a failure can be rerun)."""
    code = (
        "import hashlib, json, sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from test_fuzz_files import FIXTURES, SAMPLE, mutations, stratified\n"
        "picked = [repr(stratified(list(mutations(json.loads(f.read_text()))), SAMPLE, f.name)) for f in FIXTURES]\n"
        "print(hashlib.sha256(''.join(picked).encode()).hexdigest())\n"
    )
    root = Path(__file__).parent.parent
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(digests) == 1, digests


def test_every_kind_has_fixtures_to_mutate() -> None:
    from accept_order.experiments import KINDS

    kinds = {json.loads(p.read_text())["kind"] for p in FIXTURES if p.parent.name == "v2"}
    assert kinds == set(KINDS)
