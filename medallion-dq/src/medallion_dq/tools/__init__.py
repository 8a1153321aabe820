"""The tools: what a developer and CI run on their own machines.

The command line (`medallion-dq`, `cli`) and its commands, the pytest plugin and what they
share. They import the project model (`medallion_dq.project`), the local engine through its
face (`medallion_dq.local`) and the runtime; nothing below imports them. Their order among
themselves is import-linter's second layers contract (pyproject.toml).
"""
