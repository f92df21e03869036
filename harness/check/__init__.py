"""Statistical checks of black-box verifiers: scenarios, events, tests, the runner, its result, hypothesis strategies, asserts and the pytest plugin."""
