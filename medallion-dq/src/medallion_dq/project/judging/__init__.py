"""A project judged offline, from its manifest: what `run` checks before Spark starts and what
`check` finds. The tools word the problems; this layer finds them.

* `run_options`: a run's options against the manifest read for its target (RUN0xx), and
  `judge_run`, every problem a run has before Spark starts;
* `conventions`: the layered conventions and the rule files' own problems (DQ0xx, DQC0xx),
  held to the conventions policy the manifest read (`project/policy.py`);
* `conventions_file`: the CONVENTIONS.md a pack writes, and its drift (DQC018);
* `review`: each rule file's rules judged together (DQ026-DQ030);
* `engine`: what the judging asks of the local engine, which this layer cannot import.
"""
