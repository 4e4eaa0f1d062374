"""The repository: git (``git``), the user's checkout and its worktrees, lock and
landing (``workspace``), where copies of the code live (``trees``), reading a tree safely
(``treefiles``), which paths are tests (``testpaths``) and which are protected
(``protected``), and what a repository is made of (``detect``; the runners beyond
Python's are the judge's registry's, handed in).

May import config, models (secrets masking) and errors only.
"""
