"""``synclint confirm``: prove static findings at run time on a CUDA device.

plan        which findings can be executed, and how (lines, delays, methods)      -- no torch
instrument  watch the flagged lines of one file through sys.settrace              -- no torch
runner      one subprocess per experiment, process-group timeout, scrubbed env     -- no torch
targets     run a module, function, script, pytest or pkg.mod:fn once              -- no torch
experiments delay injection, reference runs, sanitizer, host snapshots, exceptions -- torch
worker      the subprocess entry point                                             -- torch
verdict     per-finding verdicts;  report: text/JSON/SARIF;  command: the click command
"""
