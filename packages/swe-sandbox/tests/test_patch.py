"""`_patch`: files a diff touches and the lines it adds."""

from __future__ import annotations

from swe_sandbox._patch import added_lines, files_in_patch

PATCH = """diff --git a/src/m.py b/src/m.py
--- a/src/m.py
+++ b/src/m.py
@@ -1 +1 @@
-x = 1
+x = 2
diff --git a/tests/new.py b/tests/new.py
new file mode 100644
--- /dev/null
+++ b/tests/new.py
@@ -0,0 +1 @@
+def test_new(): assert True
"""


def test_files_in_patch_in_order() -> None:
    assert files_in_patch(PATCH) == ("src/m.py", "tests/new.py")


def test_added_lines_skip_headers() -> None:
    assert added_lines(PATCH) == ("x = 2", "def test_new(): assert True")
    assert added_lines(PATCH, min_length=6) == ("def test_new(): assert True",)


def test_empty_patch() -> None:
    assert files_in_patch("") == ()
