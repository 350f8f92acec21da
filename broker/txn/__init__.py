"""The transaction coordinator and its state in __transaction_state."""
