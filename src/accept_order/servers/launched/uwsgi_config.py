"""What a running uWSGI was started with, read as uWSGI 2.0 read it (core/uwsgi.c, config.c, ini.c, yaml.c, json.c,
xmlconf.c): its UWSGI_* environment first, then its command line, each config file loaded where it is named, in
the order uWSGI applies options (the later winning).

- The environment (parse_sys_envs, before the command line): `UWSGI_THUNDER_LOCK=1` is `--thunder-lock 1`, the
  name lower-cased with `_` as `-`; `UWSGI_INI=PATH` loads that ini there.
- The command line: `--KEY`, `--KEY VALUE`, `--KEY=VALUE`, the short `-x`/`-y`/`-j` loaders, and lone arguments
  (getopt_long moves them after every option) loaded by their extension: .ini, .xml, .yaml/.yml, .json/.js; a flag
  read here also by the prefix getopt_long takes for it (`--thunder`).
- `set = KEY=VALUE` (`-S`, `UWSGI_SET`) anywhere: option KEY set to VALUE.
- Config files: `--ini`, `--yaml`/`--yml`, `--json`/`--js`, `--xml`/`--xmlconfig`, `--include` (by extension),
  `PATH:SECTION` (an xml's `PATH:ID`) for another section than [uwsgi], `:SECTION` for the last ini's; the same
  keys inside a file load that file where they stand (immediate options). Each format is read as uWSGI's own
  parser reads it (uwsgi_config_formats.py); a file uWSGI's build could read otherwise (a YAML value quoted, or a
  list, which libyaml reads and uWSGI's own parser stops at) is said as not read.

Files are read as the server sees them (probes/process_files.py: in its root and mount namespace, regular files
only). A relative path is uWSGI's start directory's: config files are read before `chdir` applies (uwsgi.c:
uwsgi_setup reads every option, then chdir()s), so where uWSGI was told to chdir, its working directory is not
where it read them. That start directory is its environment's PWD where what it read from there agrees with where it
is now (its chdir, from PWD, names its working directory); otherwise relative configs are said as not read.

Not read, and said so: a `scheme://` or `-` (stdin), `--config`/`--inherit` (plugins' and templates'), a path
with uWSGI's magic variables (%d, ...), every file that is not a readable regular file where the server is or is
larger than 1 MiB, files past 8 deep or 64 in all, and a setting inside uWSGI's config logic (`if-*`, `for*` up to
its end) or whose value uWSGI expands ($(ENV), @(FILE), %(NAME), magic variables): its text is not its value.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from ...probes.process_files import Started, TooLarge, names_cwd, read_regular
from .uwsgi_config_formats import FORMATS, Unreadable

MAX_CONFIG_BYTES = 1 << 20  # a config is a few lines; a larger file is not what uWSGI was given as one
MAX_DEPTH = 8  # a file that names itself (edited since uWSGI read it, which would not have started) ends here
# and so many files in all: a file naming itself three times was 3^9 reads (17 s here; four times, minutes)
MAX_FILES = 64
SET = "set"  # `set = KEY=VALUE` (-S) sets option KEY (uwsgi_opt_set_placeholder without its placeholder flag)
# The loaders' option names and the format each reads (uWSGI's option table: all UWSGI_OPT_IMMEDIATE)
LOADERS = {"ini": "ini", "yaml": "yaml", "yml": "yaml", "json": "json", "js": "json", "xml": "xml", "xmlconfig": "xml"}
SHORT = {"-x": "xml", "-y": "yaml", "-j": "json", "-S": SET, "-s": "socket"}
BY_EXTENSION = {".ini": "ini", ".xml": "xml", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".js": "json"}
NOT_FOLLOWED = ("config", "inherit")  # a plugin's configurator; a template applied after every other option
# applied after the config is read, in this order (chdir2 after the apps load)
CHDIRS = ("chdir", "chdir2")
# the options read here that take a value (the sockets and their protocol: uwsgi_sockets.py)
VALUED = frozenset(
    {*LOADERS, *CHDIRS, *NOT_FOLLOWED, "include", SET, "socket", "uwsgi-socket", "protocol", "socket-protocol"}
)
# uWSGI's config logic (config.c): an `if-*` or `for*` option applies the options after it, up to an end, only
# when it holds, or once per item; and values are expanded after every option is read: $(ENV), @(FILE), %(NAME)
# and a file's magic variables (%d, ...). A setting in either is not known from the text.
LOGIC_ENDS = frozenset({"end", "endif", "end-if", "endfor", "end-for"})
FOR = frozenset({"for", "for-glob", "for-times", "for-readline"})
EXPANDED = ("$(", "@(", "%")
NO_ARGUMENT = frozenset({"thunder-lock"})  # flags read here that take none (no_argument in uWSGI's table)
# uWSGI's own variables, not options (parse_sys_envs skips them)
ENV_SKIPPED = (
    "RELOADS",
    "VASSALS_DIR",
    "EMPEROR_FD",
    "BROODLORD_NUM",
    "EMPEROR_FD_CONFIG",
    "EMPEROR_PROXY",
    "JAIL_PID",
    "ORIGINAL_PROC_NAME",
)


class Reading(NamedTuple):
    """Every setting of the keys asked, in uWSGI's order (None: a flag given no value), the config files read and
    those not read (with why), and where relative paths were read from when that is not the working directory (its
    PWD)."""

    settings: tuple[tuple[str, str | None], ...]
    unread: tuple[tuple[str, str], ...]
    start: str | None = None
    read: tuple[str, ...] = ()
    # the last chdir proves where relative paths start: relative itself, or read from a relative config's path
    chdir_proves: bool = False


def read(where: Started, keys: frozenset[str]) -> Reading:
    """The settings of `keys` uWSGI started as `where` was given (see the module's docstring)."""
    wanted = keys | frozenset(CHDIRS)
    here = _Reader(where, wanted, where.cwd).reading()
    pwd = (where.environ or {}).get("PWD")
    relative = any(not os.path.isabs(name) for name in (*here.read, *(name for name, _ in here.unread)))
    if pwd and os.path.isabs(pwd) and pwd != where.cwd and relative:
        # Where it started, if what it read from there names where it is now: a file read from its working
        # directory may be another one of the same name, in the directory the right one's chdir went to
        there = _Reader(where, wanted, pwd).reading()
        if _chdir(there) and there.chdir_proves and _lands_in_cwd(where, there, pwd):
            return _only(there, keys)
    if _chdir(here):  # it changed directory after reading its config: its relative paths were not this directory's
        return _only(_Reader(where, wanted, None).reading(), keys)
    return _only(here._replace(start=None), keys)


def _chdir(reading: Reading) -> list[str]:
    return [key for key, _ in reading.settings if key in CHDIRS]


def _lands_in_cwd(where: Started, reading: Reading, start: str) -> bool:
    """Whether the chdirs read, taken from `start`, name the working directory the server has now."""
    directory = start
    for key in CHDIRS:
        values = [value for k, value in reading.settings if k == key]
        if values:
            if not values[-1] or "%" in values[-1]:
                return False
            directory = os.path.join(directory, values[-1])
    return names_cwd(where, directory)


def _only(reading: Reading, keys: frozenset[str]) -> Reading:
    return reading._replace(settings=tuple((k, v) for k, v in reading.settings if k in keys))


class _Reader:
    """One reading of the settings, relative paths taken from `start` (None: not known, so not read)."""

    def __init__(self, where: Started, wanted: frozenset[str], start: str | None) -> None:
        self.where, self.wanted, self.start = where, wanted, start
        self.unread: list[tuple[str, str]] = []
        self.read: list[str] = []
        self.relative = 0  # how many of the configs being read were named by a relative path
        self.chdir_proves = False
        self.last_ini: str | None = None
        self.files = 0  # files read, against MAX_FILES
        self.logic: str | None = None  # the config logic option whose block the options now read are in

    def reading(self) -> Reading:
        settings: list[tuple[str, str | None]] = []
        if self.where.environ is None:
            self.unread.append(("UWSGI_* environment", "its environment is not readable by this user"))
        given = [*_environment(self.where.environ or {}), *_command_line(self.where.argv)]
        for key, value in given:
            settings += self._option(key, value, 0)
        return Reading(tuple(settings), tuple(self.unread), self.start, tuple(self.read), self.chdir_proves)

    def _option(self, key: str, value: str | None, depth: int) -> Iterator[tuple[str, str | None]]:
        """One option as uWSGI adds it: a loader loads its file here, any other is a setting."""
        if key in LOGIC_ENDS:
            self.logic = None
        elif key.startswith("if-") or key in FOR:
            self.logic = key
        elif key == SET and value is not None and "=" in value:
            name, _, setting = value.partition("=")
            yield from self._option(name, setting, depth)
        elif key in self.wanted and key not in CHDIRS and (self.logic or any(m in (value or "") for m in EXPANDED)):
            why = f"inside uWSGI's {self.logic} block" if self.logic else "a value uWSGI expands when it starts"
            self._unread(f"{key} = {value}", f"{why}, not followed")
        elif key in LOADERS or key == "include":
            fmt = LOADERS.get(key) or _by_extension(value or "")
            if fmt is None:
                self.unread.append((value or key, "not a config format uWSGI reads by itself (a plugin's)"))
            else:
                yield from self._file(fmt, value or "", depth)
        elif key in NOT_FOLLOWED:
            self.unread.append((value or key, f"--{key} is not followed"))
        elif key in self.wanted:
            if key in CHDIRS:
                self.chdir_proves = self.relative > 0 or not os.path.isabs(value or "")
            yield key, value

    def _unread(self, named: str, why: str) -> None:
        if (named, why) not in self.unread:  # said once: a loop names the same file again and again
            self.unread.append((named, why))

    def _file(self, fmt: str, named: str, depth: int) -> Iterator[tuple[str, str | None]]:
        if depth > MAX_DEPTH or self.files >= MAX_FILES:
            self._unread(named, f"more than {MAX_DEPTH} files deep or {MAX_FILES} in all (a file naming itself?)")
            return
        if "://" in named or named == "-":
            self.unread.append((named, "not a file (a scheme, or stdin)"))
            return
        path, colon, section = named.rpartition(":") if ":" in named else (named, "", "")
        if fmt == "ini" and colon and not path:
            path = self.last_ini or ""  # `:SECTION`: the last ini's other section
        if "%" in path:
            self.unread.append((named, "uses uWSGI's magic variables"))
            return
        if not os.path.isabs(path) and self.start is None:
            self.unread.append((named, "relative to where uWSGI started, which its chdir left"))
            return
        self.files += 1
        try:
            text = read_regular(self.where, path, self.start, MAX_CONFIG_BYTES)
        except TooLarge as size:
            self.unread.append((named, f"{size}: larger than a config uWSGI was given is read here"))
            return
        if text is None:
            self.unread.append((named, "not a readable regular file here"))
            return
        self.read.append(named)
        if fmt == "ini":
            self.last_ini = path
        try:
            options = list(FORMATS[fmt](text, section or None, self.wanted | LOADERS.keys() | {"include", SET}))
        except Unreadable as why:
            self.unread.append((named, str(why)))
            return
        relative = not os.path.isabs(path)
        self.relative += relative
        for key, value in options:
            yield from self._option(key, value, depth + 1)
        self.relative -= relative


def _by_extension(path: str) -> str | None:
    return next((fmt for ext, fmt in BY_EXTENSION.items() if path.endswith(ext)), None)


def _environment(environ: dict[str, str]) -> Iterator[tuple[str, str | None]]:
    """UWSGI_NAME=VALUE as option `name` (lower case, `_` as `-`), in the environment's order."""
    for name, value in environ.items():
        if name.startswith("UWSGI_") and name[6:] not in ENV_SKIPPED:
            yield name[6:].lower().replace("_", "-"), value


def _command_line(argv: tuple[str, ...]) -> Iterator[tuple[str, str | None]]:
    """The options that matter, in order: loaders and chdirs with their value, `--KEY` flags (a word after one is
    not known to be its value: uWSGI's flags that matter take none), then lone config files by extension."""
    lone: list[str] = []
    words = list(argv)
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        after = words[i + 1] if i + 1 < len(words) else None
        if word in SHORT and after is not None:
            yield SHORT[word], after
            skip = True
        elif word.startswith("--") and "=" in word:
            key, _, value = word[2:].partition("=")
            if key not in NO_ARGUMENT:  # `--thunder-lock=false` stops uWSGI at start: no running one was given it
                yield key, value
        elif word.startswith("--") and word[2:] in VALUED:
            if after is not None:
                yield word[2:], after
                skip = True
        elif word.startswith("--"):
            yield _unabbreviated(word[2:]), None
        elif i > 0 and not word.startswith(("-", "[")) and _by_extension(word) is not None:
            lone.append(word)
    for word in lone:
        yield "include", word


def _unabbreviated(flag: str) -> str:
    """getopt_long takes an unambiguous prefix for the option: `--thunder` is `--thunder-lock` in uWSGI 2.0 (`th`
    is also `threads`'; where `thunder-lock-watchdog` is an option too, the prefix stops uWSGI: never one running)."""
    return next((key for key in NO_ARGUMENT if len(flag) >= 3 and key.startswith(flag)), flag)
