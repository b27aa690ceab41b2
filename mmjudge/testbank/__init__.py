"""Test banks (nuggets and exam questions per query): files, generation, grading against
them, and the rule that turns entry grades into a grade on the dataset's scale."""
