"""Building indexes: time, CPU and memory of a build, the graph it makes, document formats and
folder sync, encryption at rest."""
