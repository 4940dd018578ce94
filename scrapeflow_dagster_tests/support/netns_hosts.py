"""A network namespace's own hosts file, to change what a name resolves to inside it while a
process there runs (DNS rebinding, without a DNS server).

`ip netns exec NAME` bind-mounts `/etc/netns/NAME/hosts` over `/etc/hosts` for the program it
runs, when that file exists as the program starts; glibc's `files` source reads `/etc/hosts`
on every lookup (nothing caches it without nscd), so the next lookup after `rewrite_hosts` sees
the new mapping.
"""

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

NETNS_ETC = Path("/etc/netns")


@contextlib.contextmanager
def namespace_hosts(namespace: str, text: str) -> Iterator[Path]:
    """`/etc/netns/<namespace>/hosts` holding `text`, for processes started in `namespace`
    from now on; yields its path, and removes it (with its folder) afterwards.

    Args:
        namespace: the namespace's name (`PublicHost.name`).
        text: the hosts file, `address name` lines.
    """
    folder = NETNS_ETC / namespace
    folder.mkdir(parents=True)  # fails if it exists: another test's, never overwritten
    try:
        hosts = folder / "hosts"
        hosts.write_text(text)
        yield hosts
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        # /etc/netns did not exist before the tests (the namespaces made here need none else);
        # left as it was unless another test's folder is still in it.
        with contextlib.suppress(OSError):
            NETNS_ETC.rmdir()


def rewrite_hosts(hosts: Path, text: str) -> None:
    """Replace what `hosts` says, in place: the bind mount holds the file's inode, so a new
    file renamed over it would never be seen inside the namespace."""
    with hosts.open("r+") as file:
        file.truncate(0)
        file.write(text)
