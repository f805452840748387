# seekdb (the OceanBase kernel from PyPI pylibseekdb) as a container, for docker/compose.yaml.
FROM python:3.11-slim-bookworm
RUN pip install --no-cache-dir pylibseekdb
EXPOSE 2881
CMD ["sh", "-c", "d=$(python -c 'import os,pylibseekdb;print(os.path.dirname(pylibseekdb.__file__))') && LD_LIBRARY_PATH=$d exec $d/seekdb --nodaemon --port 2881 --base-dir /data --parameter datafile_size=2G --parameter log_disk_size=2G --parameter memory_limit=4G --parameter cpu_count=2"]
