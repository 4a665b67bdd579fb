"""Tenancy through the SDK: a token reaches its own tenant's sandboxes only. Another tenant's
sandbox id answers NotFoundError, word for word as a missing id does; lists never show it;
a token without the admin scope gets PermissionDeniedError from admin calls."""

import pytest

import sandboxd
from sandboxd import Sandbox


@pytest.fixture
def other(daemon):
    c = sandboxd.Client.connect(daemon.address, daemon.other_token)
    yield c
    c.close()


def test_another_tenants_sandbox_is_not_found(runtime: str, other: sandboxd.Client) -> None:
    with Sandbox.create(runtime=runtime, metadata={"suite": "sdk"}) as mine:
        with pytest.raises(sandboxd.NotFoundError) as theirs:
            Sandbox.connect(mine.sandbox_id, client=other)
        with pytest.raises(sandboxd.NotFoundError) as missing:
            Sandbox.connect("sb-000000000000", client=other)
        assert theirs.value.message == missing.value.message.replace("sb-000000000000",
                                                                     mine.sandbox_id)
        with pytest.raises(sandboxd.NotFoundError):
            Sandbox.get_info_of(mine.sandbox_id, client=other)
        listed = [s.sandbox_id for page in Sandbox.list(client=other, include_deleted=True)
                  for s in page]
        assert mine.sandbox_id not in listed
        assert mine.get_info().state == "running"  # untouched


def test_each_tenant_lists_its_own(other: sandboxd.Client) -> None:
    with Sandbox.create(runtime="hollow", client=other, metadata={"suite": "sdk"}) as theirs:
        assert theirs.get_info().tenant == "other"
        mine = [s.sandbox_id for page in Sandbox.list(include_deleted=True) for s in page]
        assert theirs.sandbox_id not in mine


def test_admin_calls_need_the_admin_scope(other: sandboxd.Client) -> None:
    with pytest.raises(sandboxd.PermissionDeniedError):
        other.admin.audit_verify()
    with pytest.raises(sandboxd.PermissionDeniedError):
        sandboxd.admin.bill("other", 0, 3600 * 10**9, client=other)
