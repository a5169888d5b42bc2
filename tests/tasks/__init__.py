import pytest

pytest.register_assert_rewrite("tests.tasks.helpers")
