"""The core: facts and vocabulary every layer shares (names, thresholds, units, the data
model, NVIDIA's tables) importing nothing of gputui above them."""
