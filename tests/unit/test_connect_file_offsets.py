"""Standalone Connect's offsets file under concurrent flushes from several tasks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from zurau.connect.stores import FileOffsetStore


def test_concurrent_flushes_all_land_and_the_file_holds_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "connect.offsets"

    async def run() -> None:
        store = FileOffsetStore(path)
        await store.start()
        # Forty flushes of two tasks at once: before the write lock, two writers raced on the
        # one temporary file and the loser's rename failed (the task then FAILED).
        await asyncio.gather(*(
            store.put("mirror", {f'["mirror",{{"task":{i % 2}}}]'.encode(): {"offset": i}}) for i in range(40)
        ))

    asyncio.run(run())
    on_disk = json.loads(path.read_text())
    assert on_disk == {'["mirror",{"task":0}]': {"offset": 38}, '["mirror",{"task":1}]': {"offset": 39}}
    assert not path.with_name(path.name + ".tmp").exists()
    reloaded = FileOffsetStore(path)
    asyncio.run(reloaded.start())
    assert len(reloaded.data) == 2
