/* The part of SCIP's C API that handler.pyx calls, declared as SCIP 10's headers declare
 * it (scip/def.h, type_retcode.h, type_result.h, type_var.h, type_cons.h, scip_cons.h,
 * cons_linear.h, scip_sol.h, scip_var.h, scip_numerics.h, scip_general.h, pub_cons.h).
 *
 * PySCIPOpt's wheel ships SCIP's library (pyscipopt.libs/libscip-*.so.10.0) and Cython
 * declarations of its API (pyscipopt/scip.pxd), but not SCIP's C headers, which the C that
 * Cython writes from scip.pxd includes. This file stands in for the few the handler needs;
 * handler.pyx checks at import that the SCIP loaded is version 10 and that these values
 * are PySCIPOpt's (which was compiled against SCIP's own headers). A SCIP installed with
 * its headers (SCIPOPTDIR) would let handler.pyx cimport pyscipopt.scip instead. */
#ifndef CYXLA_SCIP_API_H_
#define CYXLA_SCIP_API_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque: the handler only passes pointers to them. */
typedef struct Scip SCIP;
typedef struct SCIP_Conshdlr SCIP_CONSHDLR;
typedef struct SCIP_ConshdlrData SCIP_CONSHDLRDATA;
typedef struct SCIP_Cons SCIP_CONS;
typedef struct SCIP_ConsData SCIP_CONSDATA;
typedef struct SCIP_Var SCIP_VAR;
typedef struct SCIP_Sol SCIP_SOL;

typedef unsigned int SCIP_Bool; /* def.h */
typedef double SCIP_Real;

/* type_retcode.h (enum SCIP_Retcode: the two values used here) */
typedef enum SCIP_Retcode { SCIP_OKAY = 1, SCIP_ERROR = 0 } SCIP_RETCODE;

/* type_result.h (enum SCIP_Result: the values used here) */
typedef enum SCIP_Result {
  SCIP_FEASIBLE = 4,
  SCIP_INFEASIBLE = 5,
  SCIP_CONSADDED = 11
} SCIP_RESULT;

/* type_var.h */
typedef enum SCIP_LockType { SCIP_LOCKTYPE_MODEL = 0, SCIP_LOCKTYPE_CONFLICT = 1 } SCIP_LOCKTYPE;

/* type_cons.h: the callbacks (SCIP_DECL_CONSENFOLP, ...) */
typedef SCIP_RETCODE (*cyxla_scip_consenfolp)(SCIP* scip, SCIP_CONSHDLR* conshdlr,
                                              SCIP_CONS** conss, int nconss, int nusefulconss,
                                              SCIP_Bool solinfeasible, SCIP_RESULT* result);
typedef SCIP_RETCODE (*cyxla_scip_consenfops)(SCIP* scip, SCIP_CONSHDLR* conshdlr,
                                              SCIP_CONS** conss, int nconss, int nusefulconss,
                                              SCIP_Bool solinfeasible, SCIP_Bool objinfeasible,
                                              SCIP_RESULT* result);
typedef SCIP_RETCODE (*cyxla_scip_conscheck)(SCIP* scip, SCIP_CONSHDLR* conshdlr,
                                             SCIP_CONS** conss, int nconss, SCIP_SOL* sol,
                                             SCIP_Bool checkintegrality, SCIP_Bool checklprows,
                                             SCIP_Bool printreason, SCIP_Bool completely,
                                             SCIP_RESULT* result);
typedef SCIP_RETCODE (*cyxla_scip_conslock)(SCIP* scip, SCIP_CONSHDLR* conshdlr, SCIP_CONS* cons,
                                            SCIP_LOCKTYPE locktype, int nlockspos, int nlocksneg);
typedef SCIP_RETCODE (*cyxla_scip_consfree)(SCIP* scip, SCIP_CONSHDLR* conshdlr);

/* scip_cons.h */
SCIP_RETCODE SCIPincludeConshdlrBasic(SCIP* scip, SCIP_CONSHDLR** conshdlrptr, const char* name,
                                      const char* desc, int enfopriority, int chckpriority,
                                      int eagerfreq, SCIP_Bool needscons,
                                      cyxla_scip_consenfolp consenfolp,
                                      cyxla_scip_consenfops consenfops,
                                      cyxla_scip_conscheck conscheck,
                                      cyxla_scip_conslock conslock,
                                      SCIP_CONSHDLRDATA* conshdlrdata);
SCIP_RETCODE SCIPsetConshdlrFree(SCIP* scip, SCIP_CONSHDLR* conshdlr,
                                 cyxla_scip_consfree consfree);
SCIP_CONSHDLR* SCIPfindConshdlr(SCIP* scip, const char* name);
SCIP_RETCODE SCIPcreateCons(SCIP* scip, SCIP_CONS** cons, const char* name,
                            SCIP_CONSHDLR* conshdlr, SCIP_CONSDATA* consdata, SCIP_Bool initial,
                            SCIP_Bool separate, SCIP_Bool enforce, SCIP_Bool check,
                            SCIP_Bool propagate, SCIP_Bool local, SCIP_Bool modifiable,
                            SCIP_Bool dynamic, SCIP_Bool removable, SCIP_Bool stickingatnode);
SCIP_RETCODE SCIPaddCons(SCIP* scip, SCIP_CONS* cons);
SCIP_RETCODE SCIPreleaseCons(SCIP* scip, SCIP_CONS** cons);
/* pub_cons.h */
SCIP_CONSHDLRDATA* SCIPconshdlrGetData(SCIP_CONSHDLR* conshdlr);
/* cons_linear.h */
SCIP_RETCODE SCIPcreateConsBasicLinear(SCIP* scip, SCIP_CONS** cons, const char* name, int nvars,
                                       SCIP_VAR** vars, SCIP_Real* vals, SCIP_Real lhs,
                                       SCIP_Real rhs);
/* scip_sol.h */
SCIP_Real SCIPgetSolVal(SCIP* scip, SCIP_SOL* sol, SCIP_VAR* var);
/* scip_var.h */
SCIP_RETCODE SCIPaddVarLocksType(SCIP* scip, SCIP_VAR* var, SCIP_LOCKTYPE locktype,
                                 int nlocksdown, int nlocksup);
/* scip_numerics.h */
SCIP_Real SCIPinfinity(SCIP* scip);
/* scip_general.h */
int SCIPmajorVersion(void);

#ifdef __cplusplus
}
#endif

#endif /* CYXLA_SCIP_API_H_ */
