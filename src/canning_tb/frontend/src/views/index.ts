import { communicationView } from "./communication";
import { compareView } from "./compare";
import { kernelsView } from "./kernels";
import { memoryView } from "./memory";
import { modulesView } from "./modules";
import { operatorsView } from "./operators";
import { overviewView } from "./overview";
import { rooflineView } from "./roofline";
import { suggestionsView } from "./suggestions";
import { timelineView } from "./timeline";
import type { ViewDef } from "./view";

export const VIEWS: ViewDef[] = [overviewView, suggestionsView, operatorsView, kernelsView, rooflineView, modulesView, memoryView, communicationView, timelineView, compareView];
