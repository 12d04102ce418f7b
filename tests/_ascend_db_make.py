"""Small profiler / analysis SQLite files by hand, with the tables' schemas as torch_npu writes them (copied from
tests/fixtures/ascend/db_level2: `sqlite3 ascend_pytorch_profiler_0.db .schema`), for the db reader's
mutation tests (tests/ingest/test_ascend_db_*_mutants.py)."""
from __future__ import annotations

import sqlite3

SCHEMA = {
    "TASK": "startNs INTEGER,endNs INTEGER,deviceId INTEGER,connectionId INTEGER,globalTaskId INTEGER,"
            "globalPid INTEGER,taskType INTEGER,contextId INTEGER,streamId INTEGER,taskId INTEGER,modelId INTEGER",
    "COMPUTE_TASK_INFO": "name INTEGER,globalTaskId INTEGER PRIMARY KEY,blockDim INTEGER,mixBlockDim INTEGER,"
                         "taskType INTEGER,opType INTEGER,inputFormats INTEGER,inputDataTypes INTEGER,"
                         "inputShapes INTEGER,outputFormats INTEGER,outputDataTypes INTEGER,outputShapes INTEGER,"
                         "attrInfo INTEGER",
    "COMMUNICATION_TASK_INFO": "name INTEGER,globalTaskId INTEGER,taskType INTEGER,planeId INTEGER,groupName INTEGER,"
                               "notifyId INTEGER,rdmaType INTEGER,srcRank INTEGER,dstRank INTEGER,"
                               "transportType INTEGER,size INTEGER,dataType INTEGER,linkType INTEGER,opId INTEGER",
    "COMMUNICATION_OP": "opName INTEGER,startNs INTEGER,endNs INTEGER,connectionId INTEGER,groupName INTEGER,"
                        "opId INTEGER PRIMARY KEY,relay INTEGER,retry INTEGER,dataType INTEGER,algType INTEGER,"
                        "count NUMERIC,opType INTEGER",
    "TASK_PMU_INFO": "globalTaskId INTEGER,name INTEGER,value NUMERIC",
    "PYTORCH_API": "startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, name INTEGER, "
                   "sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, "
                   "callchainId INTEGER, type INTEGER",
    "PYTORCH_CALLCHAINS": "id INTEGER, stack INTEGER, stackDepth INTEGER",
    "CONNECTION_IDS": "id INTEGER, connectionId INTEGER",
    "STEP_TIME": "id INTEGER, startNs INTEGER, endNs INTEGER",
    "CANN_API": "startNs INTEGER,endNs INTEGER,type INTEGER,globalTid INTEGER,connectionId INTEGER PRIMARY KEY,"
                "name INTEGER",
    "ENUM_API_TYPE": "id INTEGER PRIMARY KEY,name TEXT",
    "ENUM_HCCL_DATA_TYPE": "id INTEGER PRIMARY KEY,name TEXT",
    "MEMORY_RECORD": "component INTEGER, timestamp INTEGER, totalAllocated INTEGER, totalReserved INTEGER, "
                     "totalActive INTEGER, streamPtr INTEGER, deviceId INTEGER",
    "OP_MEMORY": "name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, activeReleaseTime INTEGER, "
                 "duration INTEGER, activeDuration INTEGER, allocationTotalAllocated INTEGER, "
                 "allocationTotalReserved INTEGER, allocationTotalActive INTEGER, releaseTotalAllocated INTEGER, "
                 "releaseTotalReserved INTEGER, releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER",
    "NPU_MODULE_MEM": "moduleId INTEGER,timestampNs INTEGER,totalReserved NUMERIC,deviceId INTEGER",
    "ENUM_MODULE": "id INTEGER PRIMARY KEY,name TEXT",
    "OVERLAP_ANALYSIS": "startNs INTEGER, endNs INTEGER, type INTEGER",
    "NPU_INFO": "id INTEGER,name TEXT",
    "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    "SESSION_TIME_INFO": "startTimeNs INTEGER,endTimeNs INTEGER",
    "HOST_INFO": "hostUid TEXT,hostName TEXT",
    "META_DATA": "name TEXT,value TEXT",
    "STRING_IDS": "id INTEGER PRIMARY KEY,value TEXT",
    "ACC_PMU": "accId INTEGER,readBwLevel INTEGER,writeBwLevel INTEGER,readOstLevel INTEGER,writeOstLevel INTEGER,"
               "timestampNs NUMERIC,deviceId INTEGER",
    # analysis.db
    "StepTraceTime": "step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, overlapped NUMERIC, "
                     "communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
                     "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC",
    "CommAnalyzerBandwidth": "hccl_op_name TEXT, group_name TEXT, transport_type TEXT, transit_size NUMERIC, "
                             "transit_time NUMERIC, bandwidth NUMERIC, large_packet_ratio NUMERIC, "
                             "package_size NUMERIC, count NUMERIC, total_duration NUMERIC, step TEXT, type TEXT",
    "CommAnalyzerMatrix": "hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, transport_type TEXT, "
                          "transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, step TEXT, type TEXT, "
                          "op_name TEXT",
    "CommAnalyzerTime": "hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, elapse_time NUMERIC, "
                        "transit_time NUMERIC, wait_time NUMERIC, synchronization_time NUMERIC, idle_time NUMERIC, "
                        "step TEXT, type TEXT",
}


def make_db(path, tables: dict, schema: dict | None = None) -> str:
    """Write `tables` ({name: rows}) into a new SQLite file at path. A row is a dict of some columns (the rest
    NULL) or a full tuple; `schema` overrides / adds a table's columns (`a INTEGER, b TEXT`)."""
    schema = {**SCHEMA, **(schema or {})}
    with sqlite3.connect(path) as c:
        for name, rows in tables.items():
            c.execute(f'create table "{name}" ({schema[name]})')
            for r in rows:
                if isinstance(r, dict):
                    cols = ", ".join(r)
                    c.execute(f'insert into "{name}" ({cols}) values ({", ".join("?" * len(r))})', tuple(r.values()))
                else:
                    c.execute(f'insert into "{name}" values ({", ".join("?" * len(r))})', tuple(r))
    c.close()
    return str(path)


def open_db(path):
    """The reader's Db over a plain connection to path."""
    from canning_tb.ingest.ascend.db.read import Db
    return Db(sqlite3.connect(path))
