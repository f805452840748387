# seekdb (the OceanBase kernel from PyPI pylibseekdb) as a container, for docker/compose.yaml.
# Its data lives in /data (a volume in the compose file: kept across `down` and `up`). The data
# file starts at 1 GiB and grows a GiB at a time up to 16 (seekdb refuses to start, exit code 1,
# when the disk cannot hold its initial data file: error -4184 in /data/log/seekdb.log).
FROM python:3.11-slim-bookworm
RUN pip install --no-cache-dir pylibseekdb
EXPOSE 2881
HEALTHCHECK --interval=3s --timeout=3s --start-period=5s --retries=20 \
  CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 2881), 2).recv(1)"]
CMD ["sh", "-c", "d=$(python -c 'import os,pylibseekdb;print(os.path.dirname(pylibseekdb.__file__))') && LD_LIBRARY_PATH=$d exec $d/seekdb --nodaemon --port 2881 --base-dir /data --parameter datafile_size=1G --parameter datafile_next=1G --parameter datafile_maxsize=16G --parameter log_disk_size=2G --parameter memory_limit=4G --parameter cpu_count=2"]
