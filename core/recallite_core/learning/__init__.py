"""Learning from outcomes: feedback recording, the per-task posterior behind ranking, context-size tuning, and behaviour capture. Imports storage, policy and text."""
