//! Tests of the command builder (see below).
