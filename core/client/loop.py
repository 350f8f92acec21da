"""One asyncio event loop on a daemon thread, shared by the synchronous facades.

The producer's and consumer's engines are asyncio code; commands and Spark
tasks are plain synchronous code. They meet here: `LoopThread.run(coro)`
submits a coroutine to the loop thread and waits for its result.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading


class LoopThread:
    def __init__(self, name: str = "pylog-client"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._started = threading.Event()
        self._thread.start()
        self._started.wait()

    def _main(self):
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self.loop)
                for t in pending:
                    t.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            finally:
                self.loop.close()

    def submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro, timeout: float | None = None):
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise

    def call_soon(self, fn, *args):
        self.loop.call_soon_threadsafe(fn, *args)

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def start_with(self, coro, stop: bool = True):
        """Run a client's start-up coroutine; when it fails, stop the thread first if
        `stop` (the client owns it), so a failed constructor leaves no thread behind."""
        try:
            return self.run(coro)
        except BaseException:
            if stop:
                self.stop()
            raise

    def close_with(self, coro, timeout: float, stop: bool = True) -> None:
        """Run a client's closing coroutine, best effort (closing goes on when the
        connections fail), then stop the thread when `stop` (the client owns it)."""
        try:
            self.run(coro, timeout)
        except Exception:
            pass
        if stop:
            self.stop()

    def stop(self, timeout: float = 5.0):
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)


class Closeable:
    """`with` support for the synchronous facades: close() on leaving the block."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
