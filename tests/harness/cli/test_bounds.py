"""Sizes and addresses the user gives are refused up front with the limit and the fix (issue 45).
Table: the command, the exit code, the message fragment; the inputs are left as they were."""

import hashlib
import socket
import time

import pytest

from specproof.errors import SpecproofInputError
from specproof.harness.check.scale import ray_start
from specproof.harness.cli import main

MATRIX = '[[matrix]]\nimplementations = ["canonical-ratio-race"]\ndtypes = ["float32"]\n'

CAMPAIGNS = [
    ("whitebox-vocab", "whitebox_vocabs = [1000000000000]", "budget.whitebox_vocabs: 1,000,000,000,000 tokens is "
     "above the limit 1,048,576 - write at most 1,048,576"),
    ("whitebox-vocab-one", "whitebox_vocabs = [1]", "1 is not a vocabulary size"),
    ("samples", "samples = 100000000000", "budget.samples: 100,000,000,000 rows per scenario is above the limit"),
    ("pipeline-rows", "pipeline_rows = 1000000000", "budget.pipeline_rows: 1,000,000,000 rows per scenario"),
    ("sweep-vocab", "sweep_vocab = 1073741824", "budget.sweep_vocab: 1,073,741,824 tokens is above the limit"),
    ("large-vocab", "large_vocab = 1073741824", "budget.large_vocab: 1,073,741,824 tokens is above the limit"),
]


@pytest.mark.parametrize("name, budget, fragment", CAMPAIGNS, ids=[c[0] for c in CAMPAIGNS])
def test_campaign_sizes_are_refused_with_the_limit(name, budget, fragment, tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "x"\n[budget]\n{budget}\n{MATRIX}')
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    assert main(["campaign", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before and sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


def test_campaign_on_a_directory_is_a_usage_error(tmp_path, capsys):
    assert main(["campaign", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory - pass the path of a campaign .toml file inside it" in err and not any(tmp_path.iterdir())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_an_address_where_nothing_answers_is_refused_after_the_stated_time():
    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(SpecproofInputError, match=r"nothing answers at 127.0.0.1:\d+ \(tried for 1 s") as info:
        ray_start._answers(f"127.0.0.1:{port}", seconds=1.0)
    assert info.value.argument == "--address" and time.monotonic() - t0 < 5
    ray_start._answers("auto")  # no port: left to Ray


def test_an_address_that_answers_passes():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        ray_start._answers(f"ray://127.0.0.1:{server.getsockname()[1]}", seconds=1.0)


@pytest.mark.ray
def test_check_with_a_dead_address_exits_2_in_bounded_time(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(ray_start, "ADDRESS_SECONDS", 1.0)
    out = tmp_path / "out.json"
    got = main(["check", "specproof.impls:canonical_ratio_race", "--engine", "ray", "--address", "127.0.0.1:1",
                "--samples", "64", "--quiet", "--json", str(out)])
    err = capsys.readouterr().err
    assert got == 2 and "--address: nothing answers at 127.0.0.1:1 (tried for 1 s" in err and not out.exists()
