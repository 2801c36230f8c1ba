"""What the tests share: private Redis servers and clusters, the protocol's invariants and model,
the queue harness, the race workers, and the fixture projects."""
