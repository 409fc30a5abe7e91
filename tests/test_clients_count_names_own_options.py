"""A count given where client hosts go is pointed at the option of that command which takes it.

'ramp --clients 4,8 --rates 10' read "'4,8' is numbers, not hosts: ...; the connections in flight are -c, and a
burst's size is burst's --clients", and 'ramp -c 4' is refused ('ramp takes no -c'); 'burst --client-hosts 100'
named -c too, where burst answers "No such option '-c'". Every option the line names for the command itself (not
'burst's --clients', another command's) must be one its --help lists.
"""

import re

import pytest
from conftest import assert_one_error_line, run_cli

# an option the line names, as --help spells it: '-c', '--in-flight'; "burst's --clients" is burst's own
OPTION = re.compile(r"(?<![\w'-])(?<!burst's )(--?[a-z][a-z-]*)")


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["latency", "--clients", "1000", "-n", "10"], {"-c"}),
        (["sweep", "--clients", "64"], {"-c"}),
        (["ramp", "--clients", "4,8", "--rates", "10"], {"--concurrency-steps", "--in-flight", "--rates"}),
        (["burst", "--client-hosts", "100"], {"--clients"}),
    ],
)
def test_the_count_is_pointed_at_an_option_the_command_takes(args: list[str], named: set[str]) -> None:
    line = assert_one_error_line(run_cli(args), 2, "not hosts")
    advice = line.split("user@host);", 1)[1].split("(see", 1)[0]
    options = set(OPTION.findall(advice))
    assert options == named, line
    listed = run_cli([args[0], "--help"]).stdout
    for option in options:
        assert re.search(rf"(?<![\w-]){re.escape(option)}\b", listed), f"{args[0]} --help lists no {option}: {line}"
