"""The parts of the randomized fault test; test_fault_stress.py is its entry point (pytest
and the command line) and describes the invariants it checks.

  scenario.py  a scenario from one seed: the workers' steps and ends, the launcher's signal,
               the console's fate (the scenario generator)
  faults.py    what makes the faults happen: the workers' shell script, the console reader
               that stalls or closes, the signals sent to the launcher
  runner.py    runs the launcher on one scenario and records what happened (Result), from
               the launcher, its console, /proc and the workers' own files
  checks.py    Checker: what a run must satisfy, invariant by invariant; the exit code (1)
               in outcome.py, the logs, summary.json and the console (2, 3, 6) in records.py
"""
