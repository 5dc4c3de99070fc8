"""Side by side with the peers: LightRAG and MiniRAG against edge-rag on one subset, with one
embedder and one SLM."""
