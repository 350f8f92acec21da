"""A real browser for the console's tests: Debian's headless Chromium driven by Selenium through
chromedriver (both from apt: chromium, chromium-driver), a fresh profile per browser, no
network beyond 127.0.0.1. Screenshots go to docs/screenshots/ (README's console section)."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "screenshots"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1360,900")


def _program(*names: str) -> str:
    for n in names:
        found = shutil.which(n)
        if found:
            return found
    raise AssertionError(f"none of {', '.join(names)} is installed (apt-get install chromium chromium-driver)")


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="pylog-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = _program("chromium", "chromium-browser")
        for f in FLAGS:
            opts.add_argument(f)
        opts.add_argument(f"--user-data-dir={self.profile}")
        self.driver = webdriver.Chrome(service=Service(_program("chromedriver")), options=opts)
        self.base = ""

    def close(self) -> None:
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)

    # ------------------------------------------------------------------ pages
    def open(self, route: str, page: str, timeout: float = 30.0) -> float:
        """Go to #/route and wait until the page says it has drawn `page`; the seconds it took."""
        t0 = time.monotonic()
        self.driver.execute_script("document.getElementById('page') && (document.getElementById('page').dataset.ready = '')")
        url = f"{self.base}/#/{route}"
        if self.driver.current_url.split("#")[0].rstrip("/") == self.base.rstrip("/"):
            # the same hash again fires no hashchange: draw it again all the same
            self.driver.execute_script("if (location.hash === arguments[0]) window.dispatchEvent("
                                       "new HashChangeEvent('hashchange')); else location.hash = arguments[0];",
                                       f"#/{route}")
        else:
            self.driver.get(url)
        self.wait_ready(page, timeout)
        return time.monotonic() - t0

    def wait_ready(self, page: str, timeout: float = 30.0) -> None:
        self.wait(lambda: self.driver.find_element(By.ID, "page").get_attribute("data-ready") == page, timeout,
                  f"page {page} never drew")

    def wait(self, cond, timeout: float = 30.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if cond():
                    return
            except Exception:  # noqa: BLE001 - the DOM changes under the check: look again
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} within {timeout}s; page text: {self.text('#page')[:1500]}")
            time.sleep(0.1)

    def text(self, css: str) -> str:
        els = self.driver.find_elements(By.CSS_SELECTOR, css)
        return "\n".join(e.text for e in els)

    def rows(self, table_id: str) -> list[list[str]]:
        return self.driver.execute_script(
            "const t = document.getElementById(arguments[0]); if (!t) return null;"
            "return Array.from(t.tBodies[0].rows, r => Array.from(r.cells, c => c.innerText));", table_id)

    def error(self) -> str:
        return self.text("#error")

    def fill(self, form_id: str, values: dict) -> None:
        for name, value in values.items():
            el = self.driver.find_element(By.CSS_SELECTOR, f"#{form_id} [name='{name}']")
            if el.tag_name == "select":
                self.driver.execute_script("arguments[0].value = arguments[1]", el, value)
            else:
                el.clear()
                el.send_keys(str(value))

    def submit(self, form_id: str) -> None:
        self.driver.find_element(By.CSS_SELECTOR, f"#{form_id} button").click()

    def fetch(self, method: str, path: str, body: dict | None = None) -> dict:
        """A request from inside the page (the page's own origin): {status, body}."""
        return self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], {method: arguments[1], headers: {'Content-Type': 'application/json'},"
            " body: arguments[2] === null ? undefined : JSON.stringify(arguments[2])})"
            ".then(r => r.json().then(b => done({status: r.status, body: b})))"
            ".catch(e => done({status: -1, body: String(e)}));", path, method, body)

    def screenshot(self, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        self.driver.execute_script("const f = document.getElementById('flash'); if (f) f.innerHTML = '';")
        height = self.driver.execute_script("return Math.min(document.body.scrollHeight, 1400)")
        self.driver.set_window_size(1360, max(700, int(height)))
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(1360, 900)
        return path
