"""Template.build and AsyncTemplate.build against the suite's daemon (its RUN steps run on
the daemon's build runtime: runsc where it runs, else crun): a Dockerfile with files COPY'd
from a context directory, ENV and RUN, then a sandbox of it sees them; a TOML spec through
the async API; a RUN that fails raises its exit status; a COPY out of the context is refused
before anything is sent."""

from __future__ import annotations

import asyncio
from typing import List, Tuple

import pytest

import sandboxd


def test_a_dockerfile_build_gives_a_template_with_its_files_and_env(daemon, runtime, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "hello.txt").write_text("hi from the context\n")
    seen: List[Tuple[str, float, str]] = []
    name = f"sdk-docker-{runtime}"
    t = sandboxd.Template.build(
        name,
        # ENV FOR: each runtime's build its own steps (the same spec would be a cache hit).
        dockerfile=f"FROM base\nCOPY app /srv/app/\nENV GREETING=hello FOR={runtime}\n"
                   "RUN echo \"built: $GREETING\" > /srv/built && echo step-output\n",
        context=str(tmp_path),
        on_progress=lambda phase, fraction, output: seen.append((phase, fraction, output)),
    )
    try:
        assert t.status == "ready" and t.source == "spec" and t.scope == "tenant"
        assert t.env["GREETING"] == "hello"
        assert any("RUN echo" in phase for phase, _, _ in seen)
        assert "step-output" in "".join(output for _, _, output in seen)
        assert sandboxd.Template.get(name).digest == t.digest
        with sandboxd.Sandbox.create(template=name, runtime=runtime) as sbx:
            r = sbx.commands.run("cat /srv/app/hello.txt /srv/built; echo $GREETING")
            assert r.stdout == "hi from the context\nbuilt: hello\nhello\n"
    finally:
        sandboxd.Template.delete(name)
    assert name not in [x.name for x in sandboxd.Template.list()]


def test_the_async_api_builds_from_a_toml_spec(daemon):
    # The first RUN changes nothing: it makes no layer (what the runtime itself puts in a
    # build sandbox's writable layer, runsc's mount points under /dev, is not the step's).
    spec = ('from = "base"\n[[steps]]\nrun = "true"\n[[steps]]\nenv = { WHO = "async" }\n'
            '[[steps]]\nrun = "echo $WHO > /who"\n')

    async def build() -> sandboxd.TemplateInfo:
        return await sandboxd.AsyncTemplate.build("sdk-toml", spec=spec)

    t = asyncio.run(build())
    try:
        assert t.status == "ready"
        assert len(t.layers) == 2  # base's, and the second RUN step's
    finally:
        sandboxd.Template.delete("sdk-toml")


def test_a_failing_step_and_a_copy_out_of_the_context_are_refused(daemon):
    with pytest.raises(sandboxd.InvalidArgumentError, match="exited with status 3"):
        sandboxd.Template.build("sdk-fails", dockerfile="FROM base\nRUN exit 3\n")
    failed = sandboxd.Template.get("sdk-fails")
    assert failed.status == "failed" and "exited with status 3" in failed.failure
    sandboxd.Template.delete("sdk-fails")
    with pytest.raises(sandboxd.InvalidArgumentError, match="leaves the build context"):
        sandboxd.Template.build("sdk-escape", dockerfile="FROM base\nCOPY ../etc /x\n")
    with pytest.raises(sandboxd.NotFoundError):
        sandboxd.Template.get("sdk-escape")  # refused before anything was recorded
