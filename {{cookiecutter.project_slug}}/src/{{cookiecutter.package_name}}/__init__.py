{{ (cookiecutter.project_name ~ ": " ~ cookiecutter.description) | tojson }}

from importlib.resources import files

# The rule files, package data: installed with the project, so the pipelines and the quality
# gate read the same files on Databricks as on this machine.
RULES = files(__name__) / "rules"
