"""Evidence recall and speed of every retrieval method, the vector store and the adaptive planner."""
