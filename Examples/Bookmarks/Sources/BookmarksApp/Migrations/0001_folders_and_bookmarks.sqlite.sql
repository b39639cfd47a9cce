-- Folders, and the bookmarks in them. A URL appears at most once per folder.
-- (SQLite: Unity stores a Date as TEXT `YYYY-MM-DD HH:MM:SS.ffffff` in UTC.)
CREATE TABLE folders (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  CONSTRAINT folders_name_unique UNIQUE (name)
);

CREATE TABLE bookmarks (
  id TEXT PRIMARY KEY,
  folder_id TEXT NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  title TEXT NOT NULL,
  notes TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CONSTRAINT bookmarks_url_per_folder UNIQUE (folder_id, url)
);

CREATE INDEX bookmarks_created ON bookmarks (created_at, id);
