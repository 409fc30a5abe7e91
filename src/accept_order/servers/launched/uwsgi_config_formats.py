"""uWSGI's config formats, each read as uWSGI 2.0's own parser reads it: the options of one section, in order, as
(key, value) pairs (a value None is never made here: a bare ini key's value is "", which uWSGI takes as on).

- ini (core/ini.c): `[SECTION]` lines (the line's last character dropped, the rest as it is: `[ uwsgi ]` is not
  [uwsgi]), `;` and `#` comment lines, `key = value` trimmed of spaces, tabs and CRs, a bare `key` valued "".
- YAML (core/yaml.c without libyaml, as PyPI's pyuwsgi is built): a top-level `SECTION:` line, then `key: value`
  lines deeper than it, until a line as shallow; `#` cuts a line anywhere. uWSGI built with libyaml (Debian's)
  reads quotes, lists and inline `#` otherwise: where a key that matters has such a value, or the section holds a
  list or a flow mapping (where uWSGI's parser stops), the file is not read (Unreadable).
- JSON (core/json.c with jansson): the object named SECTION (`uwsgi`) at the top; a string as it is, true "1",
  false and null "0", an integer in decimal, an array one option per item; anything else (a real, an object)
  adds nothing.
- XML (core/xmlconf.c with expat, which Python's pyexpat is too): inside each `<uwsgi>` element (with an ID, the
  one whose first attribute is id="ID"), an element's first run of text is its value, an element with none "1".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

SECTION = "uwsgi"


class Unreadable(Exception):
    """The file is not read: why, in a few words."""


def ini(text: str, section: str | None, wanted: frozenset[str]) -> Iterator[tuple[str, str]]:
    asked, current = section or SECTION, ""
    for raw in text.split("\n"):
        line = raw.strip(" \t\r")
        if not line or line.startswith((";", "#")):
            continue
        if line.startswith("["):
            current = line[1:-1]
            continue
        if current != asked:
            continue
        key, _, value = line.partition("=")
        yield key.rstrip(" \t\r"), value.strip(" \t\r")


def yaml(text: str, section: str | None, wanted: frozenset[str]) -> Iterator[tuple[str, str]]:
    asked, inside, depth_now = section or SECTION, False, 0
    for raw in text.split("\n"):
        line = raw.split("#", 1)[0]
        if not line:
            continue
        depth = _yaml_depth(line)
        if depth <= depth_now:
            depth_now = depth
            if inside:
                return
        elif not inside:
            continue
        key = line.lstrip(" \t\r")
        if not key:
            continue
        if key[0] in "-[{":
            if inside:
                raise Unreadable("a list or flow mapping in its section, which uWSGI's builds read apart")
            continue
        if not inside:
            name, colon, _ = key.partition(":")
            inside = bool(colon) and name == asked
            continue
        at = key.find(": ") if ": " in key else key.find(":\t")  # strstr(": "), then strstr(":\t")
        if at < 0:
            return
        name, value = key[:at].rstrip(" \t"), key[at + 2 :].lstrip(" \t\r").rstrip(" \t")
        if name in wanted and (value[:1] in ("'", '"') or "#" in raw):
            raise Unreadable(f"its {name} value is quoted or commented, which uWSGI's builds read apart")
        yield name, value


def _yaml_depth(line: str) -> int:
    depth = 0
    for char in line:
        if char == " ":
            depth += 1
        elif char in "\t\r":
            depth += 8
        else:
            break
    return depth


def json(text: str, section: str | None, wanted: frozenset[str]) -> Iterator[tuple[str, str]]:
    import json as parser  # here: only a JSON config named on a server's command line is read

    try:
        root = parser.loads(text, object_pairs_hook=_jansson_object)
    except ValueError as exc:
        raise Unreadable("not JSON uWSGI could have read") from exc
    except RecursionError as exc:  # Python's decoder recurses per level (about 1,000); jansson reads 2,048
        raise Unreadable("nested deeper than this reader follows") from exc
    config = root.get(section or SECTION) if isinstance(root, dict) else None
    if not isinstance(config, dict):
        raise Unreadable(f"no {section or SECTION} object in it")
    for key, value in config.items():
        for item in value if isinstance(value, list) else [value]:
            scalar = _json_scalar(item)
            if scalar is not None:
                yield key, scalar


def _jansson_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A repeated key keeps its first place and takes its last value (jansson's json_object_set)."""
    return dict(pairs)


def _json_scalar(value: object) -> str | None:
    if value is True:
        return "1"
    if value is False or value is None:
        return "0"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return None  # a real (json_is_integer is false), an object, an array inside an array


def xml(text: str, section: str | None, wanted: frozenset[str]) -> Iterator[tuple[str, str]]:
    from xml.parsers import expat  # here: only an XML config named on a server's command line is read

    found: list[tuple[str, str]] = []
    state: dict[str, str | bool | None] = {"inside": False, "key": None}

    def start(name: str, attrs: list[str]) -> None:
        if not state["inside"]:
            if section is not None and attrs[:2] != ["id", section]:
                return
            state["inside"] = name == SECTION
        else:
            state["key"] = name

    def data(chunk: str) -> None:
        if state["inside"] and isinstance(state["key"], str):
            found.append((state["key"], chunk))
            state["key"] = None

    def end(name: str) -> None:
        if not state["inside"]:
            return
        if name == SECTION:
            state["inside"] = False
        elif isinstance(state["key"], str):
            found.append((state["key"], "1"))
            state["key"] = None

    parser = expat.ParserCreate()
    parser.ordered_attributes = True
    parser.StartElementHandler = start
    parser.CharacterDataHandler = data
    parser.EndElementHandler = end
    try:
        parser.Parse(text.encode(), False)  # uWSGI's first XML_Parse, not final
    except expat.ExpatError as exc:  # junk after the root ends uWSGI's reading; any other error ends uWSGI
        if exc.code != expat.errors.codes[expat.errors.XML_ERROR_JUNK_AFTER_DOC_ELEMENT]:
            raise Unreadable("not XML uWSGI could have read") from exc
    yield from found


FORMATS: dict[str, Callable[[str, str | None, frozenset[str]], Iterator[tuple[str, str]]]] = {
    "ini": ini,
    "yaml": yaml,
    "json": json,
    "xml": xml,
}
