"""Serving and load: edge-rag serve under concurrent chat and retrieve clients, and reader processes
querying beside a writer."""
