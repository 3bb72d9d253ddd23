"""What every benchmark shares: the machine it ran on, the manifest that says where a result came
from, and the records file the evidence runs score."""
