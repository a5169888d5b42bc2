"""Pieces shared by several tasks (readers' error type, statistics, CoNLL helpers)."""
