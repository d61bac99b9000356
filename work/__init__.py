"""What every job shares, and nothing else of the project: the one fenced lease
(work.lease), scheduled runs and what they cost (work.runs, work.metering), broker and
site-root parsing as pure functions. Imports nothing of the project, so every package
may import it (docs/design.md, "Packages")."""
