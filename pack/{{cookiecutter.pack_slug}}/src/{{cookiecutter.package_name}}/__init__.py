"""{{ cookiecutter.pack_name }}: the conventions pack `{{ cookiecutter.pack }}` of medallion-dq.

library.yml holds the shared rules (`use: {{ cookiecutter.pack }}.<rule>(...)` in a rule file),
policy.yml the conventions `medallion-dq check` enforces in the projects that name the pack.
"""
