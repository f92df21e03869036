"""The check of black-box targets against the exact law: one driver over the contract records (batched,
tree, generate), their statistics, events, RNG edge injection, Ray and the test-suite helpers."""
