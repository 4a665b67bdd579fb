"""Sandbox.run(language, code): the code goes to the interpreter's stdin and the result has
stdout, stderr, both in the order they came, and the exit code; python from the stock
`python` template (the product's first example), sh from base on runsc and crun, a template
without the interpreter named in the error, an unknown language refused before any call,
and the async form with a coroutine callback."""

import asyncio

import pytest

import sandboxd
from sandboxd import AsyncSandbox, Sandbox


def test_python_from_the_python_template(runtime: str) -> None:
    try:
        sbx = Sandbox.create(template="python", runtime=runtime, memory_mib=512)
    except sandboxd.UnavailableError as e:  # no cached tarball and no Debian archive
        pytest.skip(f"the python template cannot be had here: {e.message}")
    with sbx:
        r = sbx.run("python", "print(sum([2, 3, 5]))")
        assert (r.exit_code, r.stdout, r.stderr, r.language) == (0, "10\n", "", "python")
        assert r.ok and r.command.exec_id
        r = sbx.run("py", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(4)")
        assert (r.exit_code, r.stdout, r.stderr) == (4, "out\n", "err\n")
        assert not r.ok


def test_sh_output_in_order_and_exit_code(sbx: Sandbox) -> None:
    seen = []
    r = sbx.run("sh", "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; exit 3",
                on_stdout=seen.append)
    assert (r.exit_code, r.stdout, r.stderr) == (3, "one\nthree\n", "two\n")
    assert r.output == "one\ntwo\nthree\n"
    assert "".join(seen) == "one\nthree\n"  # the caller's callback still gets its stream


def test_a_template_without_the_interpreter_names_the_one_that_has_it(sbx: Sandbox) -> None:
    r = sbx.run("python", "print(1)")  # base: busybox only
    assert r.exit_code == 127
    assert "python3 is not in this sandbox" in r.stderr
    assert "the python template has it" in r.stderr


def test_an_unknown_language_is_refused_before_any_call() -> None:
    with pytest.raises(sandboxd.InvalidArgumentError) as e:
        sandboxd.languages.argv_for("cobol")
    assert e.value.message == "unknown language 'cobol'; the languages are python, node, bash, sh"
    assert sandboxd.LANGUAGES == ("python", "node", "bash", "sh")


def test_async_run_with_a_coroutine_callback(runtime: str) -> None:
    async def main() -> None:
        chunks = []

        async def on_err(text: str) -> None:
            await asyncio.sleep(0)
            chunks.append(text)

        async with await AsyncSandbox.create(runtime=runtime) as sbx:
            r = await sbx.run("sh", "echo to-err >&2", on_stderr=on_err)
            assert (r.exit_code, r.stderr, r.output) == (0, "to-err\n", "to-err\n")
            assert chunks == ["to-err\n"]

    asyncio.run(main())
