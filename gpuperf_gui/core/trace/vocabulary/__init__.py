"""The names every layer shares: event categories, kernel classes, precisions, an op's FLOPs from its shapes, the
trace format's fields (schema), the glossary of figures."""
