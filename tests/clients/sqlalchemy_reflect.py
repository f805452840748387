"""Reflects a table with SQLAlchemy (which parses SHOW CREATE TABLE line by line, as Alembic
and other tools do) and prints what it found as JSON: columns with types, the primary key.
    python sqlalchemy_reflect.py URL TABLE
"""
import json
import sys

from sqlalchemy import MetaData, Table, create_engine

url, name = sys.argv[1], sys.argv[2]
engine = create_engine(url)
table = Table(name, MetaData(), autoload_with=engine)
print(json.dumps({
    "columns": [[c.name, str(c.type), c.nullable] for c in table.columns],
    "primary_key": [c.name for c in table.primary_key.columns],
}))
