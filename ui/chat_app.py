"""The research chat (``rag-app ui``): a chat page, a search page and a library page.

Run with ``rag-app ui`` (which also starts the local LLM server when none is configured), or
``streamlit run ui/chat_app.py``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="rag-app · ask mathematics", page_icon="∑", layout="wide")

_HERE = Path(__file__).parent
pages = [
    st.Page(_HERE / "chat_page.py", title="Chat", icon="💬", default=True),
    st.Page(_HERE / "search_page.py", title="Search", icon="🔎", url_path="search"),
    st.Page(_HERE / "library_page.py", title="Library", icon="📚", url_path="library"),
]
st.navigation(pages).run()
