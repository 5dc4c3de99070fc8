"""Serving and load: edge-rag serve under concurrent chat and retrieve clients and under a hostile
client's attacks, and reader processes querying beside a writer."""
